package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"
)

// mergeError is a refusal of Merge. Its message names the files, what is
// wrong and what to do about it in a merge; it matches ErrMergeInput and
// the error it stands for (ErrModelMismatch, ErrCorrupt, ...), whose own
// advice is for a build and is not shown.
type mergeError struct {
	msg   string
	cause error
}

func (e *mergeError) Error() string   { return e.msg }
func (e *mergeError) Unwrap() []error { return []error{ErrMergeInput, e.cause} }

// inputError is the refusal of the input in that OpenReader or a read of
// it failed with err: worded by refusal, else err wrapped as ErrMergeInput.
func inputError(in string, err error) error {
	if e, ok := refusal(in, false, err); ok {
		return e
	}
	return fmt.Errorf("%w %s: %w", ErrMergeInput, in, err)
}

// refusal words err, which reading path (out when isOut, else an input)
// gave, for a merge; ok is false for an error it does not know (a busy
// index, a cancelled merge), which is left as it is.
func refusal(path string, isOut bool, err error) (_ error, ok bool) {
	check := fmt.Sprintf("`clipidx --db %s status --check`", path)
	rebuild := fmt.Sprintf("rebuild it with `clipidx --db %s build --reindex DIR...`", path)
	var what, advice, outAdvice string
	switch {
	case errors.Is(err, ErrNoIndex) && !isOut:
		what, advice = "there is no index there (no such file, or an empty one)", "check its name"
	case errors.Is(err, ErrNotIndex):
		what = "it is not a clipidx index (another program's file, such as a FAISS index?)"
		advice, outAdvice = "leave it out of the inputs", "name a new file, or a clipidx index, as OUT"
	case errors.Is(err, ErrNewerSchema):
		what = "it was written by a newer clipidx"
		advice, outAdvice = "merge with that clipidx, or leave it out", "merge with that clipidx, or into a new file"
	case errors.Is(err, ErrSchema):
		what = fmt.Sprintf("it is not an index of this clipidx's layout (%s)", detail(path, err))
		advice, outAdvice = rebuild+", or leave it out", "merge into a new file instead"
	case errors.Is(err, ErrFault):
		what = fmt.Sprintf("it changed while it was read, or is damaged (%s)", detail(path, err))
		advice = "run the merge again; if this persists, check it with " + check
		outAdvice = advice + ", or merge into a new file"
	case errors.Is(err, ErrCorrupt):
		what = fmt.Sprintf("it is damaged (%s)", detail(path, err))
		advice = "check it with " + check + ", " + rebuild + ", or leave it out"
		outAdvice = "merge into a new file instead (" + check + " says what is damaged)"
	default:
		return err, false
	}
	if isOut {
		return &mergeError{msg: fmt.Sprintf("cannot merge into %s: %s; it is left as it was: %s", path, what, outAdvice), cause: err}, true
	}
	return &mergeError{msg: fmt.Sprintf("cannot merge %s: %s; %s", path, what, advice), cause: err}, true
}

// detail is err's message for path without what the sentinels it wraps
// advise a build to do, and without path leading it.
func detail(path string, err error) string {
	s := err.Error()
	s = strings.ReplaceAll(s, ErrCorrupt.Error(), "index damaged")
	s = strings.ReplaceAll(s, ErrFault.Error(), "the file changed while it was read")
	for _, p := range []string{"open " + path + ": ", path + ": "} {
		s = strings.TrimPrefix(s, p)
	}
	return s
}

// mismatchError is the refusal of vectors that differ (cause, from
// Identity.Compatible): those of the inputs named lead, whose identity is
// that of the file a, and those of b, out itself when out is set (else
// another input).
func mismatchError(cause error, lead, a string, aID Identity, b string, bID Identity, out string) error {
	rebuild := "`clipidx --db " + a
	if lead != a {
		rebuild = "`clipidx --db IN"
	}
	modelFlag := ""
	if otherModel(aID, bID) || aID.Arch != "" && bID.Arch != "" && aID.Arch != bID.Arch || aID.Dim != bID.Dim {
		rebuild += " --model MODEL"
		modelFlag = fmt.Sprintf(", with the folder of model %q as MODEL", bID.Model)
	}
	rebuild += " build --reindex"
	if aID.EXIF != bID.EXIF {
		rebuild += fmt.Sprintf(" --exif=%v", bID.EXIF)
	}
	rebuild += " DIR...`" + modelFlag
	diff := diffText(aID, a, bID, b)
	var msg string
	if out != "" {
		msg = fmt.Sprintf("cannot merge %s into %s: their vectors differ (%s); %s is left as it was. Merge into a new file instead, or rebuild %s as %s was built: %s",
			lead, out, diff, out, lead, out, rebuild)
	} else {
		msg = fmt.Sprintf("cannot merge %s with %s: their vectors differ (%s); nothing was written. Merge each into an index of its own, or rebuild %s as %s was built: %s",
			lead, b, diff, a, b, rebuild)
	}
	return &mergeError{msg: msg, cause: cause}
}

// diffText says how the identities a, of the file an, and b, of bn,
// differ, as Identity.Compatible compares them.
func diffText(a Identity, an string, b Identity, bn string) string {
	var d []string
	add := func(what, x, y string) {
		d = append(d, fmt.Sprintf("%s %s in %s, %s in %s", what, x, an, y, bn))
	}
	model := otherModel(a, b)
	switch {
	case model && a.Model == b.Model:
		add("model "+strconv.Quote(a.Model)+" with weights", fmt.Sprintf("%.12s", a.WeightsHash), fmt.Sprintf("%.12s", b.WeightsHash))
	case model:
		add("model", strconv.Quote(a.Model), strconv.Quote(b.Model))
	}
	if a.Arch != "" && b.Arch != "" && a.Arch != b.Arch {
		add("model configuration", strconv.Quote(a.Arch), strconv.Quote(b.Arch))
	}
	if a.Dim != b.Dim {
		add("dimension", strconv.Itoa(a.Dim), strconv.Itoa(b.Dim))
	}
	if a.Preprocess != b.Preprocess {
		add("preprocessing", strconv.Quote(a.Preprocess), strconv.Quote(b.Preprocess))
	}
	if a.EXIF != b.EXIF {
		onOff := map[bool]string{true: "on (--exif=true)", false: "off (--exif=false)"}
		add("EXIF orientation", onOff[a.EXIF], onOff[b.EXIF])
	}
	if len(d) == 0 {
		return "model or settings"
	}
	return strings.Join(d, "; ")
}

// otherModel reports whether a and b name other models, as
// Identity.Compatible tells: by the weights' hashes when both know them,
// else by name.
func otherModel(a, b Identity) bool {
	if a.WeightsHash != "" && b.WeightsHash != "" {
		return a.WeightsHash != b.WeightsHash
	}
	return a.Model != b.Model
}

// inputsName names the inputs ins in a message: the first, and how many
// more.
func inputsName(ins []string) string {
	switch len(ins) {
	case 1:
		return ins[0]
	case 2:
		return ins[0] + " and " + ins[1]
	}
	return fmt.Sprintf("%s and %d more inputs", ins[0], len(ins)-1)
}

// outIdentity returns the identity of the index at out, and whether there
// is one (no file, or an empty one, is none); an out that is no index of
// this clipidx, or a damaged one, is refused (see refusal).
func outIdentity(out string, timeout time.Duration) (Identity, bool, error) {
	if _, err := os.Stat(out); errors.Is(err, fs.ErrNotExist) {
		return Identity{}, false, nil
	}
	r, err := OpenReader(out, ReaderOptions{Timeout: timeout})
	if errors.Is(err, ErrNoIndex) {
		return Identity{}, false, nil
	}
	if err != nil {
		e, _ := refusal(out, true, err)
		return Identity{}, false, e
	}
	defer r.Close()
	var id Identity
	err = r.View(func(s *Snapshot) error {
		id = s.Identity()
		return nil
	})
	if err != nil {
		e, _ := refusal(out, true, err)
		return Identity{}, false, e
	}
	return id, id.Dim > 0, nil
}
