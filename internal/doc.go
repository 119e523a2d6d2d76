// Package internal holds the small helpers that the platform's parts share
// (errors, IDs, secrets, stores, tokens, logs). Go lets only this module import
// them, so the root of the repository shows the parts and nothing else.
//
// A helper is added as a subpackage here and listed in the table of folders
// of docs/internals/architecture.md; layout_test.go fails until it is. A package meant for code outside the
// module does not belong here: it lives beside the part that owns it and says
// so in its doc comment.
package internal
