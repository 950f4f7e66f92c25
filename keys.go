package bloomkv

import "fmt"

// MaxKeySize and MaxValueSize bound what Put, Delete and Batch accept.
const (
	MaxKeySize   = 64 << 10
	MaxValueSize = 64 << 20
)

// checkKey rejects a key the engine does not store: empty, or longer than
// MaxKeySize.
func checkKey(key []byte) error {
	if what := keyProblem(key); what != "" {
		return invalidf("%s", what)
	}
	return nil
}

// keyProblem says what is wrong with key, or "" when nothing is. Batch
// puts the words in its own error, after the operation they concern.
func keyProblem(key []byte) string {
	switch {
	case len(key) == 0:
		return "empty key"
	case len(key) > MaxKeySize:
		return fmt.Sprintf("key of %d bytes exceeds the %d-byte limit", len(key), MaxKeySize)
	}
	return ""
}

// checkValue rejects a value longer than MaxValueSize.
func checkValue(value []byte) error {
	if what := valueProblem(value); what != "" {
		return invalidf("%s", what)
	}
	return nil
}

func valueProblem(value []byte) string {
	if len(value) > MaxValueSize {
		return fmt.Sprintf("value of %d bytes exceeds the %d-byte limit", len(value), MaxValueSize)
	}
	return ""
}
