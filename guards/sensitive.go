package guards

import (
	"strings"
	"unicode"
)

// sensitiveWords are single words that mark a field as asking for a secret.
var sensitiveWords = map[string]bool{
	"password": true, "passwords": true, "passwd": true, "pwd": true,
	"passphrase": true, "passcode": true,
	"secret": true, "secrets": true,
	"token":  true,
	"apikey": true, "privatekey": true, "accesskey": true,
	"credential": true, "credentials": true,
	"ssn":        true,
	"creditcard": true, "cardnumber": true, "cvv": true, "cvc": true, "cvv2": true,
	"pin": true, "otp": true, "iban": true,
}

// sensitivePhrases are runs of consecutive words that mark a secret.
var sensitivePhrases = [][]string{
	{"api", "key"},
	{"private", "key"},
	{"access", "key"},
	{"credit", "card"},
	{"card", "number"},
	{"security", "code"},
	{"social", "security"},
}

// SensitiveSuspected reports whether a form field looks like it asks for a
// secret. The rule (documented in docs/safety.md): name, title and
// description are each split into words — at every character that is not a
// letter or digit, at lower-to-upper case changes ("apiKey" → api key,
// "APIKey" → api key) and between letters and digits ("cvv2" stays one
// word, see below) — and lowercased. A field is suspected when any of them
// holds one of the words password(s), passwd, pwd, passphrase, passcode,
// secret(s), token, apikey, privatekey, accesskey, credential(s), ssn,
// creditcard, cardnumber, cvv, cvc, cvv2, pin, otp, iban, or one of the
// phrases "api key", "private key", "access key", "credit card", "card
// number", "security code", "social security"; or when format is
// "password" (any case). Whole words only: "spinner", "opinion", "tokenize"
// and "pinned" do not match. A JSON Schema "writeOnly": true also flags the
// field (ParseForm checks it).
func SensitiveSuspected(name, title, description, format string) bool {
	if strings.EqualFold(strings.TrimSpace(format), "password") {
		return true
	}
	for _, s := range []string{name, title, description} {
		if sensitiveText(s) {
			return true
		}
	}
	return false
}

func sensitiveText(s string) bool {
	words := splitWords(s)
	for i, w := range words {
		if sensitiveWords[w] {
			return true
		}
		for _, ph := range sensitivePhrases {
			if i+len(ph) <= len(words) && equalWords(words[i:i+len(ph)], ph) {
				return true
			}
		}
	}
	return false
}

func equalWords(a, b []string) bool {
	for i := range b {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// splitWords splits s into lowercase words: at non-alphanumerics, at a
// lower-to-upper change, before the last capital of an acronym followed by
// lowercase ("APIKey" → API, Key), and at letter→digit changes except that
// a digit run directly after letters stays with them ("cvv2", "sha256").
func splitWords(s string) []string {
	rs := []rune(s)
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	for i, r := range rs {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush()
			continue
		}
		if len(cur) > 0 {
			prev := cur[len(cur)-1]
			switch {
			case unicode.IsUpper(r) && (unicode.IsLower(prev) || unicode.IsDigit(prev)):
				flush()
			case unicode.IsUpper(r) && unicode.IsUpper(prev) && i+1 < len(rs) && unicode.IsLower(rs[i+1]):
				flush()
			case unicode.IsLetter(r) && unicode.IsDigit(prev):
				flush()
			}
		}
		cur = append(cur, r)
	}
	flush()
	return words
}
