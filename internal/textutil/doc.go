// Package textutil holds small text helpers shared by bichat's packages.
package textutil
