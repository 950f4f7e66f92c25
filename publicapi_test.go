package bloomkv

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// publicPackages are the top-level packages an outsider may call (DESIGN.md):
// no exported signature of theirs may name a type of an internal package.
var publicPackages = []string{"compaction", "filter", "kv", "memtable", "rangedel", "sstable", "vfs", "wal"}

// TestPublicAPINamesNoInternalType reads the non-test sources of the public
// packages and reports every exported function, method, type, field,
// interface method, variable or constant whose declared type names an
// identifier of an internal/ package. It is a syntactic check: what go doc
// shows an outsider, not what the bodies use.
func TestPublicAPINamesNoInternalType(t *testing.T) {
	fset := token.NewFileSet()
	for _, dir := range publicPackages {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			src, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, bad := range internalTypesInAPI(fset, f) {
				t.Errorf("%s: exported API names an internal type: %s", dir, bad)
			}
		}
	}
}

// internalTypesInAPI returns "position: what" for each exported declaration
// of f whose signature or type mentions an internal import.
func internalTypesInAPI(fset *token.FileSet, f *ast.File) []string {
	internal := map[string]bool{} // local names of internal imports
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		if !strings.Contains(path, "/internal/") {
			continue
		}
		name := path[strings.LastIndex(path, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		internal[name] = true
	}
	if len(internal) == 0 {
		return nil
	}
	var out []string
	check := func(what string, n ast.Node) {
		if n == nil {
			return
		}
		ast.Inspect(n, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if id, ok := sel.X.(*ast.Ident); ok && internal[id.Name] {
					out = append(out, fset.Position(sel.Pos()).String()+": "+what+" uses "+id.Name+"."+sel.Sel.Name)
				}
			}
			return true
		})
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() || (d.Recv != nil && !exportedRecv(d.Recv)) {
				continue
			}
			check(d.Name.Name, d.Type)
			if d.Recv != nil {
				check(d.Name.Name, d.Recv)
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					if s.Name.IsExported() {
						if s.TypeParams != nil {
							check(s.Name.Name, s.TypeParams)
						}
						check(s.Name.Name, exportedParts(s.Type))
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.IsExported() && s.Type != nil {
							check(n.Name, s.Type)
						}
					}
				}
			}
		}
	}
	return out
}

// exportedRecv reports whether a method's receiver type is exported.
func exportedRecv(recv *ast.FieldList) bool {
	e := recv.List[0].Type
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.IsExported()
		default:
			return true
		}
	}
}

// exportedParts returns the part of a type expression an outsider sees: a
// struct's exported and embedded fields, an interface's methods and
// embedded types, or the whole expression.
func exportedParts(e ast.Expr) ast.Node {
	st, ok := e.(*ast.StructType)
	if !ok {
		return e
	}
	visible := &ast.FieldList{}
	for _, fld := range st.Fields.List {
		if len(fld.Names) == 0 {
			visible.List = append(visible.List, fld) // embedded: promoted
			continue
		}
		for _, n := range fld.Names {
			if n.IsExported() {
				visible.List = append(visible.List, fld)
				break
			}
		}
	}
	return visible
}
