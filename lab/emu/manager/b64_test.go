package manager

import (
	"encoding/base64"
	"net"
)

func jsonB64(s string) ([]byte, error) { return base64.RawURLEncoding.DecodeString(s) }

type netTCPAddr = net.TCPAddr

func netListen() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }
