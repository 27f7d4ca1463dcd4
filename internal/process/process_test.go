package process

import "testing"

func TestTailBuffer(t *testing.T) {
	b := &tailBuffer{max: 5}
	b.Write([]byte("abc"))
	b.Write([]byte("defg"))
	if string(b.Bytes()) != "cdefg" {
		t.Fatalf("got %q", b.Bytes())
	}
	b.Write([]byte("0123456789"))
	if string(b.Bytes()) != "56789" {
		t.Fatalf("got %q", b.Bytes())
	}
}
