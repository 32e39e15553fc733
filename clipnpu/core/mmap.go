package core

import (
	"os"

	"github.com/clipidx/clipidx/internal/mmap"
)

// CanMap reports whether MapFile maps files (unix) or reads them whole.
const CanMap = mmap.Mapped

// MapFile maps path read-only where the system can. Pages are faulted in
// only when a tower reads them, so a text-only load never reads the vision
// weights from disk. Elsewhere the file is read whole.
func MapFile(path string) (*Mapping, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() == 0 {
		return &Mapping{}, nil
	}
	if !mmap.Mapped {
		data, _, err := mmap.Read(f, st.Size())
		if err != nil {
			return nil, err
		}
		return &Mapping{Data: data}, nil
	}
	data, unmap, err := mmap.Map(f, st.Size())
	if err != nil {
		return nil, err
	}
	return &Mapping{Data: data, unmap: unmap}, nil
}

// dropPages drops the whole pages inside b, a part of the mapping, from
// the process's resident set (see mmap.Drop).
func dropPages(b []byte) { mmap.Drop(b) }

// Populate maps in all of m's pages now, for a file about to be read whole
// (see mmap.Populate); a no-op where the file was read into memory.
func (m *Mapping) Populate() {
	if m != nil && m.unmap != nil {
		mmap.Populate(m.Data)
	}
}
