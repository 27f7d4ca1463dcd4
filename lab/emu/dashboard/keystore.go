package dashboard

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
)

// KeystoreName is the keystore's file name in the dashboard's config directory (the real
// /etc/wazuh-dashboard/opensearch_dashboards.keystore that `opensearch-dashboards-keystore add
// opensearch.password` writes).
const KeystoreName = "opensearch_dashboards.keystore"

// The real keystore's format (src/cli_keystore/keystore.js of OpenSearch Dashboards, from Kibana):
// "1:" + base64(salt[64] | iv[12] | GCM tag[16] | AES-256-GCM(JSON of the settings)), the key
// PBKDF2-SHA512 of the keystore password ("" unless one was set) with 10000 iterations.
const (
	keystoreVersion = "1"
	keystoreIter    = 10000
)

var errKeystore = errors.New("unable to read the keystore (corrupt or wrong password)")

// WriteKeystore writes settings (e.g. opensearch.password) to path in the real keystore's format.
func WriteKeystore(path string, settings map[string]string) error {
	text, err := json.Marshal(settings)
	if err != nil {
		return err
	}
	salt, iv := make([]byte, 64), make([]byte, 12)
	if _, err := rand.Read(salt); err != nil {
		return err
	}
	if _, err := rand.Read(iv); err != nil {
		return err
	}
	gcm, err := keystoreCipher("", salt)
	if err != nil {
		return err
	}
	sealed := gcm.Seal(nil, iv, text, nil) // ciphertext | tag
	ct, tag := sealed[:len(sealed)-gcm.Overhead()], sealed[len(sealed)-gcm.Overhead():]
	blob := append(append(append(append([]byte{}, salt...), iv...), tag...), ct...)
	return os.WriteFile(path, []byte(keystoreVersion+":"+base64.StdEncoding.EncodeToString(blob)), 0o600)
}

// ReadKeystore reads the settings of a keystore file written by the real tool or WriteKeystore.
func ReadKeystore(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	ver, data, ok := strings.Cut(strings.TrimSpace(string(b)), ":")
	if !ok || ver != keystoreVersion {
		return nil, fmt.Errorf("%s: %w", path, errKeystore)
	}
	raw, err := base64.StdEncoding.DecodeString(data)
	if err != nil || len(raw) < 92 {
		return nil, fmt.Errorf("%s: %w", path, errKeystore)
	}
	salt, iv, tag, ct := raw[:64], raw[64:76], raw[76:92], raw[92:]
	gcm, err := keystoreCipher("", salt)
	if err != nil {
		return nil, err
	}
	text, err := gcm.Open(nil, iv, append(append([]byte{}, ct...), tag...), nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, errKeystore)
	}
	var out map[string]any
	if err := json.Unmarshal(text, &out); err != nil {
		return nil, fmt.Errorf("%s: %w", path, errKeystore)
	}
	m := map[string]string{}
	for k, v := range out {
		m[k] = fmt.Sprint(v)
	}
	return m, nil
}

func keystoreCipher(password string, salt []byte) (cipher.AEAD, error) {
	key, err := pbkdf2.Key(sha512.New, password, salt, keystoreIter, 32)
	if err != nil {
		return nil, err
	}
	blk, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(blk)
}
