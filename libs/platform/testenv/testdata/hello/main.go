// Command hello is the command binary_test.go builds.
package main

import "fmt"

func main() { fmt.Println("hello") }
