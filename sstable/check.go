package sstable

import (
	"bytes"
	"math"

	"github.com/bloomkv/bloomkv/filter"
	"github.com/bloomkv/bloomkv/kv"
)

// Check reads the whole table from the file, bypassing the cache, and
// verifies: every block's checksum and encoding; that data blocks tile
// [0, DataSize) in index order; that keys increase across blocks and every
// index key separates its block from the next; that the properties match
// the contents; and that the filter and the range filter report every key
// present. Filter
// membership is verified when the filter's keys can be recomputed: always
// for filters over whole user keys, and for extractor filters when the
// reader has the extractor of the same name. It is meant for tools and
// tests.
func (r *Reader) Check() error {
	c := checker{r: r}
	if r.hasFilter() {
		if !r.partitioned() {
			// Read afresh when the filter lives in the block cache: Check
			// verifies the file, not a copy. (Partitions are always read
			// afresh, one by one, by walkPartitions.)
			if r.cacheFilter {
				rf, err := r.readFilter(nil)
				if err != nil {
					return err
				}
				c.filter = &rf.Block
			} else {
				c.filter = &r.filter
			}
			c.filterVariant, c.filterBlockKeys = c.filter.Variant(), uint64(c.filter.NumKeys())
			c.filterLoc = location{r.name, kindFilter, r.footer.filter.offset}
		}
		c.wholeKeys = r.props.FilterKeyName == "" || r.props.FilterWholeKeys
		if r.filterMode == filterByExtractor {
			c.filterKey = r.filterKey
		}
		// The keys the filter was built from can be counted when every part
		// of them can be recomputed.
		c.countable = r.props.FilterKeyName == "" || c.filterKey != nil
	}
	var err error
	if r.partitioned() {
		err = c.walkPartitions()
	} else {
		err = c.walkIndex(r.index, location{r.name, kindIndex, r.footer.index.offset})
	}
	if err != nil {
		return err
	}
	return c.compareProperties()
}

// walkPartitions checks a partitioned table partition by partition: each
// index partition read from the file, its last key the top-level key, its
// filter partition holding the keys of its data blocks.
func (c *checker) walkPartitions() error {
	r := c.r
	for i := range r.parts {
		p := &r.parts[i]
		if r.hasFilter() {
			rf, err := r.readFilterAt(p.filter, kindFilterPartition, nil)
			if err != nil {
				return err
			}
			c.filter = &rf.Block
			c.filterLoc = location{r.name, kindFilterPartition, p.filter.offset}
			if i == 0 {
				c.filterVariant = rf.Variant()
			} else if rf.Variant() != c.filterVariant {
				return location{r.name, kindFilterPartition, p.filter.offset}.corruptf("variant %d, partition 0's is %d", rf.Variant(), c.filterVariant)
			}
			c.filterBlockKeys += uint64(rf.NumKeys())
			// The writer's partitions start their filters afresh: a
			// repeated filter key is added again.
			c.haveLastFK = false
			c.newFilter = true
		}
		loc := location{r.name, kindIndexPartition, p.index.offset}
		raw, err := r.readBlock(p.index, kindIndexPartition)
		if err != nil {
			return err
		}
		b, err := r.decodeIndexPartition(raw, loc)
		if err != nil {
			return err
		}
		if err := c.walkIndex(b, loc); err != nil {
			return err
		}
		if !bytes.Equal(c.prevIndexKey, p.key) {
			return location{r.name, kindIndex, r.footer.index.offset}.corruptf(
				"partition %d ends with index key %s, the top-level index says %s", i, formatKey(c.prevIndexKey), formatKey(p.key))
		}
	}
	return nil
}

type checker struct {
	r         *Reader
	filter    *filter.Block       // the table's filter, when it has one
	filterKey func([]byte) []byte // the table's extractor; nil: its filter keys cannot be recomputed
	wholeKeys bool                // the filter holds whole user keys
	countable bool                // every key the filter was built from can be recomputed
	// lastFK is the last extractor key seen, for counting as the writer adds.
	lastFK     []byte
	haveLastFK bool

	got           Properties // recounted from the contents
	prevKey       []byte
	filterKeys    uint64
	lastFilterKey uint64
	prevIndexKey  []byte
	filterLoc     location // the filter block or partition c.filter is
	// newFilter: the next filter key starts a filter partition.
	newFilter bool
	// filterVariant and filterBlockKeys are what the filter block, or
	// its partitions together, say of themselves.
	filterVariant   filter.Variant
	filterBlockKeys uint64
	expectOffset    uint64 // where the next data block must start
}

// walkIndex checks the data blocks of one index block (a partition's, or
// an unpartitioned table's whole index) at loc.
func (c *checker) walkIndex(index *block, indexLoc location) error {
	r := c.r
	var idx blockIter
	idx.init(index)
	for ok := idx.First(); ok; ok = idx.Next() {
		h, err := r.dataHandle(&idx)
		if err != nil {
			return err
		}
		if h.offset != c.expectOffset {
			return indexLoc.corruptf("data block at %d follows data ending at %d", h.offset, c.expectOffset)
		}
		c.expectOffset = h.end()
		raw, err := r.readBlock(h, kindData)
		if err != nil {
			return err
		}
		loc := location{r.name, kindData, h.offset}
		b, err := decodeBlock(raw, loc)
		if err != nil {
			return err
		}
		if err := c.walkBlock(b, loc, idx.Key()); err != nil {
			return err
		}
		c.prevIndexKey = append(c.prevIndexKey[:0], idx.Key()...)
		c.got.NumDataBlocks++
		c.got.DataSize += h.size + blockTrailerLen
	}
	return nil
}

// walkBlock checks one data block's keys against their neighbours and its
// index key, recounting properties and probing the filter.
func (c *checker) walkBlock(b *block, loc location, indexKey []byte) error {
	r := c.r
	var it blockIter
	it.init(b)
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		if c.prevKey != nil && kv.CompareInternal(c.prevKey, k) >= 0 {
			return loc.corruptf("key %s does not sort after %s", formatKey(k), formatKey(c.prevKey))
		}
		if c.prevIndexKey != nil && kv.CompareInternal(k, c.prevIndexKey) <= 0 {
			return loc.corruptf("key %s does not sort after the previous block's index key %s", formatKey(k), formatKey(c.prevIndexKey))
		}
		ukey, seq, kind, _ := kv.ParseInternalKey(k)
		c.count(k, seq, kind, len(it.Value()))
		if err := c.checkFilterKeys(ukey, k); err != nil {
			return err
		}
		if rf := r.rangeFilter; rf != nil && !rf.MayContainKeys(ukey, append(ukey[:len(ukey):len(ukey)], 0)) {
			return location{r.name, kindRangeFilter, r.props.RangeFilterOffset}.corruptf("range filter: false negative for key %s", formatKey(k))
		}
		c.prevKey = append(c.prevKey[:0], k...)
	}
	if kv.CompareInternal(c.prevKey, indexKey) > 0 {
		return location{r.name, kindIndex, r.footer.index.offset}.corruptf(
			"index key %s sorts before its block's last key %s", formatKey(indexKey), formatKey(c.prevKey))
	}
	return nil
}

func (c *checker) count(k []byte, seq uint64, kind kv.Kind, valueLen int) {
	p := &c.got
	if p.NumEntries == 0 {
		p.SmallestKey = append([]byte(nil), k...)
		p.SmallestSeq, p.LargestSeq = seq, seq
	}
	p.SmallestSeq = min(p.SmallestSeq, seq)
	p.LargestSeq = max(p.LargestSeq, seq)
	p.NumEntries++
	if kind == kv.KindDelete {
		p.NumDeletions++
	}
	p.RawKeyBytes += uint64(len(k))
	p.RawValueBytes += uint64(valueLen)
}

// compareProperties compares the recounted properties with the stored ones.
func (c *checker) compareProperties() error {
	r, want, got := c.r, &c.r.props, &c.got
	loc := location{r.name, kindProperties, r.footer.props.offset}
	if got.NumEntries > 0 {
		got.LargestKey = c.prevKey
	}
	nums := []struct {
		name      string
		want, got uint64
	}{
		{"NumEntries", want.NumEntries, got.NumEntries},
		{"NumDeletions", want.NumDeletions, got.NumDeletions},
		{"NumDataBlocks", want.NumDataBlocks, got.NumDataBlocks},
		{"RawKeyBytes", want.RawKeyBytes, got.RawKeyBytes},
		{"RawValueBytes", want.RawValueBytes, got.RawValueBytes},
		{"DataSize", want.DataSize, got.DataSize},
		{"SmallestSeq", want.SmallestSeq, got.SmallestSeq},
		{"LargestSeq", want.LargestSeq, got.LargestSeq},
	}
	for _, n := range nums {
		if n.want != n.got {
			return loc.corruptf("%s says %d, the table holds %d", n.name, n.want, n.got)
		}
	}
	if !bytes.Equal(want.SmallestKey, got.SmallestKey) || !bytes.Equal(want.LargestKey, got.LargestKey) {
		return loc.corruptf("key range [%s, %s] differs from the contents [%s, %s]",
			formatKey(want.SmallestKey), formatKey(want.LargestKey), formatKey(got.SmallestKey), formatKey(got.LargestKey))
	}
	if !r.hasFilter() {
		if want.FilterVariant != 0 || want.FilterKeyCount != 0 || want.BitsPerKey() > 0 {
			return loc.corruptf("describes a filter (variant %d, %d keys, %g bits/key) the table does not have",
				want.FilterVariant, want.FilterKeyCount, want.BitsPerKey())
		}
		return nil
	}
	if want.BloomBitsPerKey <= 0 {
		return loc.corruptf("bits per key %d, yet the table has a filter block", want.BloomBitsPerKey)
	}
	if b := want.FilterBitsPerKey; b > 0 && want.BloomBitsPerKey != max(1, int64(math.Round(b))) {
		return loc.corruptf("bits per key %d disagrees with the exact %g", want.BloomBitsPerKey, b)
	}
	if uint8(c.filterVariant) != want.FilterVariant {
		return loc.corruptf("filter variant %d, the filter block says %d", want.FilterVariant, c.filterVariant)
	}
	if c.filterBlockKeys != want.FilterKeyCount {
		return loc.corruptf("filter key count %d, the filter block says %d", want.FilterKeyCount, c.filterBlockKeys)
	}
	if c.countable && c.filterKeys != want.FilterKeyCount {
		return loc.corruptf("filter key count %d, the table holds %d distinct filter keys", want.FilterKeyCount, c.filterKeys)
	}
	return nil
}

// checkFilterKeys checks that the filter holds what the writer added for
// ukey (its filter key, its whole key, or both) and counts the distinct
// additions as the writer does.
func (c *checker) checkFilterKeys(ukey, ikey []byte) error {
	add := func(key []byte) error {
		if !c.filter.MayContain(key) {
			return c.filterLoc.corruptf("false negative for key %s", formatKey(ikey))
		}
		if h := filter.Hash(key); c.filterKeys == 0 || c.newFilter || h != c.lastFilterKey {
			c.filterKeys++
			c.lastFilterKey = h
			c.newFilter = false
		}
		return nil
	}
	if c.filterKey != nil {
		fk := c.filterKey(ukey)
		if !c.wholeKeys {
			return add(fk)
		}
		if !c.haveLastFK || !bytes.Equal(fk, c.lastFK) {
			if err := add(fk); err != nil {
				return err
			}
			c.lastFK, c.haveLastFK = append(c.lastFK[:0], fk...), true
		}
	}
	if c.wholeKeys {
		return add(ukey)
	}
	return nil
}
