//go:build !linux

package iptables

import "os"

func growPipe(*os.File) {}
