// Package lazylog makes a zap core encode the fields a logger is given
// (logr's WithValues, zap's With) only when something is logged through it.
//
// controller-runtime gives every reconcile a logger with its controller,
// object and reconcile ID; zap encodes those into a copy of the JSON
// encoder's buffer at once, whether the reconcile logs or not. Most
// reconciles log nothing: at 3,000 workload clusters (test/scale
// --profile-dir) those copies were 1.1 GB of the 20.8 GB the operator
// allocated until its heap's peak. zapcore.NewLazyWith defers the encoding
// to the first write; Core applies it to every With of a logger, not only
// the first, so chains of WithValues stay lazy.
//
// The fields are encoded when first written, not when given: a value
// passed by pointer and changed in between is logged as it is then, as
// with zap's Logger.WithLazy. The operator's loggers are given names,
// IDs and copies.
package lazylog

import "go.uber.org/zap/zapcore"

// Core wraps c so that its With is lazy (zapcore.NewLazyWith), and so are
// the With of what that returns.
func Core(c zapcore.Core) zapcore.Core { return lazy{c} }

type lazy struct{ zapcore.Core }

// With defers the fields to the first write through the result.
func (l lazy) With(fields []zapcore.Field) zapcore.Core {
	if len(fields) == 0 {
		return l
	}
	return lazy{zapcore.NewLazyWith(l.Core, fields)}
}
