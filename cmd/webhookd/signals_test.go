package main

import (
	"bytes"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestFirstSignalCancelsSecondExits(t *testing.T) {
	var stderr syncBuffer
	codes := make(chan int, 1)
	ctx, stop := notifyContext(&stderr, func(code int) { codes <- code })
	defer stop()

	require.NoError(t, syscall.Kill(syscall.Getpid(), syscall.SIGTERM))
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the first SIGTERM did not cancel the context")
	}
	require.Empty(t, codes)

	require.NoError(t, syscall.Kill(syscall.Getpid(), syscall.SIGTERM))
	select {
	case code := <-codes:
		require.Equal(t, 143, code)
	case <-time.After(5 * time.Second):
		t.Fatal("the second SIGTERM did not exit")
	}
	require.Contains(t, stderr.String(), "second signal (terminated): exiting at once")
}

func TestStopLeavesNoGoroutineWaiting(t *testing.T) {
	ctx, stop := notifyContext(&bytes.Buffer{}, func(int) { t.Error("exit called") })
	stop()
	require.Error(t, ctx.Err(), "stop cancels the context")
}
