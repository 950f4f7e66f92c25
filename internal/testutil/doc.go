// Package testutil holds what several packages' data-driven tests share:
// the textual form of internal keys and the iterator command language of
// testdata files. Only tests import it.
package testutil
