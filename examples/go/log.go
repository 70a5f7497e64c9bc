package cuzk

/*
#include "cuzk.h"

void cuzkGoLog(void *user, cuzk_log_level level, char *target, char *message);

// The exported Go function as the ABI's callback type (its strings are const there).
static cuzk_log_callback cuzk_go_log_callback(void) {
	return (cuzk_log_callback)cuzkGoLog;
}
*/
import "C"

import "sync"

// LogLevel is a log record's severity (and the most verbose level a logger asks for).
type LogLevel int

// Log levels.
const (
	LogOff   LogLevel = C.CUZK_LOG_LEVEL_OFF
	LogError LogLevel = C.CUZK_LOG_LEVEL_ERROR
	LogWarn  LogLevel = C.CUZK_LOG_LEVEL_WARN
	LogInfo  LogLevel = C.CUZK_LOG_LEVEL_INFO
	LogDebug LogLevel = C.CUZK_LOG_LEVEL_DEBUG
	LogTrace LogLevel = C.CUZK_LOG_LEVEL_TRACE
)

var (
	loggerMu sync.RWMutex
	logger   func(level LogLevel, target, message string)
)

// SetLogger sends the library's log records up to max to f (from any goroutine, several at
// once); nil stops them. f must not call into this package.
func SetLogger(f func(level LogLevel, target, message string), max LogLevel) error {
	if max < LogOff || max > LogTrace {
		return &Error{StatusInvalidArgument, "unknown log level"}
	}
	loggerMu.Lock()
	logger = f
	loggerMu.Unlock()
	cb := C.cuzk_go_log_callback()
	if f == nil {
		cb = nil
	}
	return call(func(e **C.char) C.enum_cuzk_status {
		return C.cuzk_set_log_callback(cb, nil, C.cuzk_log_level(max), e)
	})
}
