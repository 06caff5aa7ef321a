package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// OperatorPackage is the operator's main package, relative to the module root.
const OperatorPackage = "./cmd/azure-private-endpoint-operator"

// BuildOperator builds the operator binary into dir and returns its path.
// It runs `go build` in the module root, so the build cache makes a second
// build cheap.
func BuildOperator(ctx context.Context, dir string) (string, error) {
	root, err := ModuleRoot(ctx)
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, "azure-private-endpoint-operator")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, OperatorPackage)
	cmd.Dir = root
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the operator: %w\n%s", err, msg)
	}
	return out, nil
}

// shared is the operator binary SharedOperator built for this process.
var shared struct {
	sync.Mutex
	dir, bin string
	err      error
}

// SharedOperator builds the operator binary once per test process, into a
// directory of its own, for every test of a package that runs it (linking
// it again per test cost 10-40 s on a loaded 2-core machine). A package
// that uses it calls RemoveSharedOperator from its TestMain after the
// tests.
func SharedOperator(ctx context.Context) (string, error) {
	shared.Lock()
	defer shared.Unlock()
	if shared.bin != "" || shared.err != nil {
		return shared.bin, shared.err
	}
	dir, err := os.MkdirTemp("", "apeo-operator-")
	if err != nil {
		return "", err
	}
	shared.dir = dir
	shared.bin, shared.err = BuildOperator(ctx, dir)
	return shared.bin, shared.err
}

// RemoveSharedOperator removes SharedOperator's binary, if it built one.
func RemoveSharedOperator() {
	shared.Lock()
	defer shared.Unlock()
	if shared.dir != "" {
		_ = os.RemoveAll(shared.dir)
	}
	shared.dir, shared.bin, shared.err = "", "", nil
}

// Revision names the commit the work tree is at, for the reports a
// benchmark writes: the short hash, with "+changes" when tracked files
// differ from it (outside docs/, where the reports themselves go), or
// "unknown" outside a git checkout.
func Revision(ctx context.Context) string {
	root, err := ModuleRoot(ctx)
	if err != nil {
		return "unknown"
	}
	out, err := exec.CommandContext(ctx, "git", "-C", root, "rev-parse", "--short=7", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	rev := strings.TrimSpace(string(out))
	if exec.CommandContext(ctx, "git", "-C", root, "diff", "--quiet", "HEAD", "--", ".", ":(exclude)docs").Run() != nil {
		rev += "+changes"
	}
	return rev
}

// ModuleRoot is the directory of this module's go.mod.
func ModuleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("not inside the operator's Go module")
	}
	return filepath.Dir(gomod), nil
}

// Operator is the operator binary running as a separate process, configured
// the way a user configures it: flags and a kubeconfig.
type Operator struct {
	// MetricsURL serves the operator's Prometheus metrics.
	MetricsURL string
	// HealthURL serves /healthz and /readyz.
	HealthURL string
	// LogFile receives the operator's log.
	LogFile string

	cmd  *exec.Cmd
	done chan error
	log  *os.File
}

// OperatorFlags are the flags every sandboxed operator needs: the
// kubeconfig, the custom cloud reaching azuresim as the default cloud, and
// loopback addresses for metrics and probes. Callers append the rest.
func (sb *Sandbox) OperatorFlags() []string {
	return []string{
		"--kubeconfig=" + sb.Kubeconfig,
		"--azure-custom-cloud=" + sb.CloudFile,
		"--default-azure-environment=" + CloudName,
	}
}

// StartOperator starts binary with sb.OperatorFlags() and extra, logging to
// logFile. Stop it with Stop.
func (sb *Sandbox) StartOperator(binary, logFile string, extra ...string) (*Operator, error) {
	return sb.StartOperatorWithEnv(binary, logFile, nil, extra...)
}

// StartOperatorWithEnv is StartOperator with environment variables added
// to this process's (HTTPS_PROXY and SSL_CERT_FILE for a well-known cloud
// through a CloudProxy).
func (sb *Sandbox) StartOperatorWithEnv(binary, logFile string, env []string, extra ...string) (*Operator, error) {
	metrics, err := FreeAddress()
	if err != nil {
		return nil, err
	}
	health, err := FreeAddress()
	if err != nil {
		return nil, err
	}
	log, err := os.Create(logFile)
	if err != nil {
		return nil, err
	}
	// Plain HTTP metrics on loopback: the demo and the benchmark scrape
	// them without a token (production keeps the HTTPS default).
	args := append(sb.OperatorFlags(), "--metrics-bind-address="+metrics, "--metrics-secure=false", "--health-probe-bind-address="+health)
	args = append(args, extra...)
	// Not CommandContext: the caller decides when to stop, and stopping is
	// a SIGTERM with a grace period, not a kill.
	cmd := exec.Command(binary, args...)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdout, cmd.Stderr = log, log
	// Its own process group: a Ctrl-C in the terminal reaches the caller,
	// which then stops the operator in order.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		return nil, fmt.Errorf("starting %s: %w", binary, err)
	}
	op := &Operator{
		MetricsURL: "http://" + metrics + "/metrics", HealthURL: "http://" + health,
		LogFile: logFile, cmd: cmd, done: make(chan error, 1), log: log,
	}
	go func() { op.done <- cmd.Wait() }()
	return op, nil
}

// Exited reports the process's exit, if it has exited.
func (op *Operator) Exited() (bool, error) {
	select {
	case err := <-op.done:
		op.done <- err
		return true, err
	default:
		return false, nil
	}
}

// Stop sends SIGTERM and waits up to grace for the operator to exit, then
// kills it. It returns the operator's exit error, if any, and is safe to
// call more than once.
func (op *Operator) Stop(grace time.Duration) error {
	if op.cmd.Process == nil {
		return nil
	}
	if exited, err := op.Exited(); exited {
		return closeAfter(op.log, err)
	}
	_ = op.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-op.done:
		op.done <- err
		return closeAfter(op.log, err)
	case <-time.After(grace):
		_ = op.cmd.Process.Kill()
		err := <-op.done
		op.done <- err
		return closeAfter(op.log, fmt.Errorf("operator did not stop within %s and was killed: %w", grace, err))
	}
}

// Kill sends SIGKILL, as an OOM kill or a node loss would, and waits for
// the process to go.
func (op *Operator) Kill() error {
	if op.cmd.Process == nil {
		return nil
	}
	if exited, _ := op.Exited(); exited {
		return closeAfter(op.log, nil)
	}
	_ = op.cmd.Process.Kill()
	err := <-op.done
	op.done <- err
	return closeAfter(op.log, nil)
}

func closeAfter(c io.Closer, err error) error {
	_ = c.Close()
	return err
}

// Usage is what the operator process has used so far.
type Usage struct {
	CPU time.Duration
	// PeakRSS is the resident set's high-water mark (VmHWM).
	PeakRSS int64
}

// Usage reads the process's CPU time and peak RSS from /proc (Linux).
func (op *Operator) Usage() (Usage, error) {
	pid := op.cmd.Process.Pid
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return Usage{}, err
	}
	// Fields after the command name (in parentheses, which may hold spaces).
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	if len(fields) < 13 {
		return Usage{}, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	// USER_HZ is 100 on every Linux this runs on.
	u := Usage{CPU: time.Duration(utime+stime) * (time.Second / 100)}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Usage{}, err
	}
	u.PeakRSS, _ = statusBytes(status, "VmHWM")
	return u, nil
}

// statusBytes is the value of a "<key>: <n> kB" line of /proc/<pid>/status
// in bytes; false when there is none.
func statusBytes(status []byte, key string) (int64, bool) {
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, key+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb * 1024, err == nil
		}
	}
	return 0, false
}

// AnonRSS reads the process's anonymous resident memory now (RssAnon of
// /proc/<pid>/status, Linux): its resident set without the pages of files
// it maps (the binary's code above all), which the kernel can drop and
// read again. It is what a container's memory limit cannot reclaim, and
// what the Go runtime's soft memory limit governs.
func (op *Operator) AnonRSS() (int64, error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", op.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	if n, ok := statusBytes(status, "RssAnon"); ok {
		return n, nil
	}
	return 0, fmt.Errorf("no RssAnon in /proc/%d/status", op.cmd.Process.Pid)
}

// FreeAddress returns a loopback address (host:port) that was free a
// moment ago, for a server to bind to.
func FreeAddress() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String(), nil
}
