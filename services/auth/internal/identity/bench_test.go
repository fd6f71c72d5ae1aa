package identity

import "testing"

// BenchmarkVerifyPasswordDefault is the argon2id cost of one login at the default parameters.
func BenchmarkVerifyPasswordDefault(b *testing.B) {
	enc, err := HashPassword("correct horse battery", DefaultHashParams())
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if ok, _, _ := VerifyPassword(enc, "correct horse battery", DefaultHashParams()); !ok {
			b.Fatal("mismatch")
		}
	}
}
