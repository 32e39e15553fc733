package watch

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Filesystem magic numbers (statfs f_type) of the filesystems whose
// changes made elsewhere raise no inotify events.
var networkMagic = map[int64]string{
	0x6969:     "NFS",
	0x517b:     "SMB",
	0xff534d42: "CIFS",
	0xfe534d42: "SMB2",
	0x65735546: "FUSE",
	0x01021997: "9P",
	0x00c36400: "Ceph",
	0x5346414f: "AFS",
}

// networkFS names the network filesystem dir is on ("" for a local one,
// or when statfs fails: the walk then says what is wrong).
func networkFS(dir string) string {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return ""
	}
	return networkMagic[int64(uint32(st.Type))]
}

// isLimit reports whether a watch failed for the system's limit on
// watches (inotify_add_watch: ENOSPC) or on open files (EMFILE).
func isLimit(err error) bool {
	return errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EMFILE)
}

// The limits on inotify watches: the system's, and that of the user
// namespace the process runs in (a container's), which may be lower; the
// lower one is reached first.
const (
	sysWatchLimit  = "/proc/sys/fs/inotify/max_user_watches"
	userWatchLimit = "/proc/sys/user/max_inotify_watches"
)

// limitAdvice says how to raise the limit, naming the one that applies
// and its current value.
func limitAdvice() string {
	return limitText(readLimit(sysWatchLimit), readLimit(userWatchLimit))
}

// readLimit reads a limit from /proc (-1 when it cannot be read).
func readLimit(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return -1
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// limitText words limitAdvice for the system's limit sys and the user
// namespace's user (-1: not known).
func limitText(sys, user int64) string {
	if user >= 0 && (sys < 0 || user < sys) {
		return fmt.Sprintf("the limit on watched folders of this user namespace is reached (user.max_inotify_watches = %d, below the system's fs.inotify.max_user_watches); raise it with `sysctl user.max_inotify_watches=1048576` as root of the namespace, or where the container is set up", user)
	}
	cur := "?"
	if sys >= 0 {
		cur = strconv.FormatInt(sys, 10)
	}
	return fmt.Sprintf("the system's limit on watched folders is reached (fs.inotify.max_user_watches = %s); raise it with `sudo sysctl fs.inotify.max_user_watches=1048576` (and a line in /etc/sysctl.d/ to keep it)", cur)
}

// mountPoints lists the mounts of this process's mount namespace
// (/proc/self/mountinfo: the mount's id and device, its point with octal
// escapes undone, and the filesystem type after the " - "); none when it
// cannot be read.
func mountPoints() []Mount {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []Mount
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		m := Mount{Point: unescapeMount(f[4]), ID: f[0] + " " + f[2]}
		for i := 5; i+1 < len(f); i++ {
			if f[i] == "-" {
				m.FSType = f[i+1]
				break
			}
		}
		out = append(out, m)
	}
	return out
}

// unescapeMount undoes mountinfo's escapes: \040 (space), \011 (tab),
// \012 (newline), \134 (backslash).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
