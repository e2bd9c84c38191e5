package main

import (
	"context"
	"flag"
	"fmt"
)

func versionCommand(*flag.FlagSet) func(ctx context.Context, args []string) error {
	return func(context.Context, []string) error {
		fmt.Println(version)
		return nil
	}
}
