//go:build !unix

package deliver

import "time"

func processCPU() (time.Duration, bool) { return 0, false }
