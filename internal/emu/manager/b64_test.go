package manager

import "encoding/base64"

func jsonB64(s string) ([]byte, error) { return base64.RawURLEncoding.DecodeString(s) }
