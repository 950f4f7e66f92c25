package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
)

// writeJSON writes the whole report, indented for people and diffs.
func writeJSON(w io.Writer, rep *report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// csvColumns are the JSON names of result's fields, in declaration order:
// the CSV header, so CSV columns and JSON fields never drift apart.
func csvColumns() []string {
	t := reflect.TypeFor[result]()
	cols := make([]string, 0, t.NumField())
	for f := range t.Fields() {
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" && name != "-" {
			cols = append(cols, name)
		}
	}
	return cols
}

// writeCSV writes a header and one row per result. A nil ratio is an empty
// cell; files_per_level is space-separated.
func writeCSV(w io.Writer, results []*result) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(csvColumns()); err != nil {
		return err
	}
	for _, r := range results {
		v := reflect.ValueOf(r).Elem()
		row := make([]string, 0, v.NumField())
		for i := range v.NumField() {
			if tag := v.Type().Field(i).Tag.Get("json"); tag == "" || tag == "-" {
				continue
			}
			row = append(row, csvCell(v.Field(i)))
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func csvCell(v reflect.Value) string {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return ""
		}
		return csvCell(v.Elem())
	case reflect.Float64:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	case reflect.Slice:
		parts := make([]string, v.Len())
		for i := range parts {
			parts[i] = csvCell(v.Index(i))
		}
		return strings.Join(parts, " ")
	default:
		return fmt.Sprint(v.Interface())
	}
}
