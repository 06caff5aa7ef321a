package testenv

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Process is a helper program of the test world running in a process of
// its own: CAPZ's webhook server, the real CAPZ and ASO controllers. It
// dies with the test process, even one killed by a timeout.
type Process struct {
	// Name says what it is, in errors.
	Name string
	// LogFile holds its output when it was started with one; otherwise
	// the last 64 KiB are kept in memory.
	LogFile string

	cmd     *exec.Cmd
	mem     *tailBuffer
	exited  chan struct{}
	mu      sync.Mutex
	waitErr error
}

// StartProcess starts bin with args and env added to this process's
// environment, writing its output to logFile, or to memory when logFile
// is "".
func StartProcess(name, logFile string, env []string, bin string, args ...string) (*Process, error) {
	p := &Process{Name: name, LogFile: logFile, exited: make(chan struct{})}
	var out io.Writer
	var closeOut func()
	if logFile != "" {
		f, err := os.Create(logFile)
		if err != nil {
			return nil, err
		}
		out, closeOut = f, func() { _ = f.Close() }
	} else {
		p.mem = &tailBuffer{max: 64 << 10}
		out, closeOut = p.mem, func() {}
	}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = out, out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		closeOut()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	go func() {
		err := p.cmd.Wait()
		closeOut()
		p.mu.Lock()
		p.waitErr = err
		p.mu.Unlock()
		close(p.exited)
	}()
	return p, nil
}

// Done is closed when the process has ended.
func (p *Process) Done() <-chan struct{} { return p.exited }

// Exited tells whether the process has ended, and how.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.exited:
		p.mu.Lock()
		defer p.mu.Unlock()
		return true, p.waitErr
	default:
		return false, nil
	}
}

// Tail returns the last n bytes of the process's output.
func (p *Process) Tail(n int) string {
	if p.mem != nil {
		s := p.mem.String()
		if len(s) > n {
			s = s[len(s)-n:]
		}
		return s
	}
	return TailFile(p.LogFile, n)
}

// Stop ends the process: SIGTERM, then SIGKILL after grace. It reports a
// process that had died on its own.
func (p *Process) Stop(grace time.Duration) error {
	if gone, err := p.Exited(); gone {
		return fmt.Errorf("%s exited during the test (%w); its output ends: %s", p.Name, err, p.Tail(4096))
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
	return nil
}

// TailFile returns the last n bytes of a file, or why it cannot be read.
func TailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
