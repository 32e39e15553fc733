//go:build amd64 && !purego

package gemm

import (
	"bytes"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// encoded is one instruction the generator emitted as BYTE directives.
type encoded struct {
	fn    string // the TEXT symbol it belongs to
	bytes []byte
	mnem  string // Intel syntax as objdump prints it, spaces removed
}

var byteRE = regexp.MustCompile(`BYTE \$0x([0-9a-f]{2})`)

// parseEncoded reads the BYTE lines of bf16_amd64.s with their comments.
func parseEncoded(t *testing.T) []encoded {
	t.Helper()
	src, err := os.ReadFile("bf16_amd64.s")
	if err != nil {
		t.Fatalf("read bf16_amd64.s: %v", err)
	}
	var out []encoded
	fn := ""
	for _, line := range strings.Split(string(src), "\n") {
		if name, ok := strings.CutPrefix(line, "TEXT ·"); ok {
			fn = name[:strings.Index(name, "(")]
		}
		code, comment, ok := strings.Cut(line, "//")
		if !ok || !strings.Contains(code, "BYTE") {
			continue
		}
		e := encoded{fn: fn, mnem: strings.ReplaceAll(strings.TrimSpace(comment), " ", "")}
		for _, m := range byteRE.FindAllStringSubmatch(code, -1) {
			b, _ := strconv.ParseUint(m[1], 16, 8)
			e.bytes = append(e.bytes, byte(b))
		}
		if len(e.bytes) != strings.Count(code, "BYTE") {
			t.Fatalf("bf16_amd64.s: unparsed BYTE directive in %q", line)
		}
		out = append(out, e)
	}
	return out
}

func objdumpPath(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("objdump")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("objdump (GNU binutils) is needed to check the AMX and VDPBF16PS encodings: %v", err)
		}
		t.Skipf("encodings not checked: objdump (GNU binutils) not found: %v", err)
	}
	return path
}

// rawOps are the instructions the generator encodes by hand.
var rawOps = []string{"ldtilecfg", "tileloadd", "tdpbf16ps", "tilestored", "tilerelease", "tilezero", "vdpbf16ps"}

// insnRE matches an objdump line: address, raw bytes, instruction.
var insnRE = regexp.MustCompile(`^\s*[0-9a-f]+:\t(?:[0-9a-f]{2} )+\s*\t(.*)$`)

func disassembled(out []byte) []string {
	var insns []string
	for _, line := range strings.Split(string(out), "\n") {
		if m := insnRE.FindStringSubmatch(line); m != nil {
			insns = append(insns, strings.ReplaceAll(strings.Join(strings.Fields(m[1]), " "), " ", ""))
		}
	}
	return insns
}

// TestBF16Encodings proves the bytes the generator emits for instructions
// Go's assembler lacks: objdump must decode each line's bytes as exactly the
// instruction its comment names, both as a raw blob and inside the linked
// test binary (so the directives were assembled as written).
func TestBF16Encodings(t *testing.T) {
	objdump := objdumpPath(t)
	enc := parseEncoded(t)
	var blob []byte
	for _, e := range enc {
		blob = append(blob, e.bytes...)
	}
	for _, op := range rawOps {
		n := 0
		for _, e := range enc {
			if strings.HasPrefix(e.mnem, op) {
				n++
			}
		}
		if n == 0 && op != "tilezero" {
			t.Errorf("bf16_amd64.s encodes no %s", op)
		}
	}
	bin := filepath.Join(t.TempDir(), "enc.bin")
	if err := os.WriteFile(bin, blob, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(objdump, "-D", "-b", "binary", "-m", "i386:x86-64", "-M", "intel", bin).CombinedOutput()
	if err != nil {
		t.Fatalf("objdump of the encodings: %v\n%s", err, out)
	}
	got := disassembled(out)
	if len(got) != len(enc) {
		t.Fatalf("objdump decoded %d instructions from %d encoded ones:\n%s", len(got), len(enc), out)
	}
	for i, e := range enc {
		if got[i] != e.mnem {
			t.Errorf("% x in %s: objdump says %q, the comment %q", e.bytes, e.fn, got[i], e.mnem)
		}
	}

	// The same instructions, in order, inside each linked function. `go
	// test` strips the symbol table of the binary it runs, so build one.
	exe := filepath.Join(t.TempDir(), "gemm.test")
	gocmd := filepath.Join(runtime.GOROOT(), "bin", "go")
	if msg, err := exec.Command(gocmd, "test", "-c", "-o", exe, ".").CombinedOutput(); err != nil {
		t.Fatalf("go test -c: %v\n%s", err, msg)
	}
	byFn := map[string][]string{}
	for _, e := range enc {
		byFn[e.fn] = append(byFn[e.fn], e.mnem)
	}
	for fn, want := range byFn {
		sym := "github.com/clipidx/clipidx/internal/gemm." + fn + ".abi0"
		out, err := exec.Command(objdump, "-d", "-M", "intel", "--disassemble="+sym, exe).CombinedOutput()
		if err != nil {
			t.Fatalf("objdump %s: %v\n%s", sym, err, out)
		}
		var have []string
		for _, insn := range disassembled(out) {
			for _, op := range rawOps {
				if strings.HasPrefix(insn, op) {
					have = append(have, insn)
				}
			}
		}
		if strings.Join(have, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s in the test binary has\n%s\nwant\n%s", sym, strings.Join(have, "\n"), strings.Join(want, "\n"))
		}
	}
}

// TestBF16Generated checks that bf16_amd64.s is what gen_bf16_amd64.py
// writes (skipped without python3, except under CI=true).
func TestBF16Generated(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("python3 is needed to check bf16_amd64.s against its generator: %v", err)
		}
		t.Skipf("bf16_amd64.s not checked against its generator: %v", err)
	}
	out := filepath.Join(t.TempDir(), "bf16_amd64.s")
	if msg, err := exec.Command(py, "gen_bf16_amd64.py", out).CombinedOutput(); err != nil {
		t.Fatalf("gen_bf16_amd64.py: %v\n%s", err, msg)
	}
	want, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	have, err := os.ReadFile("bf16_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(have, want) {
		t.Error("bf16_amd64.s differs from the output of gen_bf16_amd64.py: run `python3 gen_bf16_amd64.py`")
	}
}

// TestAMXStrip checks the AMX strip kernel over nb blocks against nb calls
// of one block each (bit for bit: each block runs the same instructions),
// from a bias (ldi = 0) and accumulating into C (init = C), with guard
// values around and between the rows of C that no call may touch.
func TestAMXStrip(t *testing.T) {
	useBF16Kernel(t, "amx")
	r := rand.New(rand.NewPCG(4, 5))
	const guard = float32(-7.25e30)
	for _, k := range []int{32, 64, 96, 608} {
		for nb := 1; nb <= 9; nb++ {
			lda, ldp := k*32, k*32 // A: two 16-row tiles-rows; B: panels of k/2 pairs
			a := make([]uint16, 2*lda/2)
			for i := range a {
				a[i] = RoundBF16(r.Float32()*2 - 1)
			}
			b := make([]uint16, nb*2*ldp/2)
			for i := range b {
				b[i] = RoundBF16(r.Float32()*2 - 1)
			}
			bias := bf16RandSlice(r, nb*bf16NR, 1)
			ldcF := nb*bf16NR + 5 // floats; the 5 between rows are guards
			for _, acc := range []bool{false, true} {
				strip, blocks := make([]float32, 32*ldcF+3), make([]float32, 32*ldcF+3)
				for i := range strip {
					strip[i], blocks[i] = guard, guard
					if acc && i%ldcF < nb*bf16NR && i < 32*ldcF {
						strip[i] = float32(i%13) - 6
						blocks[i] = strip[i]
					}
				}
				init, ldi := &bias[0], 0
				if acc {
					init, ldi = &strip[0], ldcF*4
				}
				amxBF16Strip(&amxConfig[0], &a[0], lda, &b[0], ldp, k, &strip[0], ldcF*4, init, ldi, nb)
				for j := range nb {
					init := &bias[j*bf16NR]
					if acc {
						init = &blocks[j*bf16NR]
					}
					amxBF16(&amxConfig[0], &a[0], lda, &b[j*ldp], ldp, k, &blocks[j*bf16NR], ldcF*4, init, ldi)
				}
				for i := range strip {
					inside := i < 32*ldcF && i%ldcF < nb*bf16NR
					if !inside && strip[i] != guard {
						t.Fatalf("k=%d nb=%d acc=%v: the strip wrote %v at %d (row %d, column %d), outside C", k, nb, acc, strip[i], i, i/ldcF, i%ldcF)
					}
					if math.Float32bits(strip[i]) != math.Float32bits(blocks[i]) {
						t.Fatalf("k=%d nb=%d acc=%v: C[%d][%d] = %v from the strip, %v from one block at a time", k, nb, acc, i/ldcF, i%ldcF, strip[i], blocks[i])
					}
				}
			}
		}
	}
}
