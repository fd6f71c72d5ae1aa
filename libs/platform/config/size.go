package config

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseSize reads a size written as a byte count or with a K, M or G suffix (powers of
// 1024): 512M, 32G. It refuses zero, negative and overflowing sizes.
func ParseSize(s string) (int64, error) {
	mult := int64(1)
	num := s
	switch {
	case strings.HasSuffix(s, "G"):
		mult, num = 1<<30, strings.TrimSuffix(s, "G")
	case strings.HasSuffix(s, "M"):
		mult, num = 1<<20, strings.TrimSuffix(s, "M")
	case strings.HasSuffix(s, "K"):
		mult, num = 1<<10, strings.TrimSuffix(s, "K")
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("%q is not a size such as 512M or 32G", s)
	}
	return n * mult, nil
}
