// Command clipidx indexes a photo collection with CLIP and searches it by
// meaning. See the README for the commands.
package main

import "os"

func main() {
	os.Exit(run(os.Args[1:]))
}
