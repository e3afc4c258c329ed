// A Go client that ignores every proxy variable: its own http.Transport
// with Proxy nil, so it resolves each name through the job's resolver
// and connects itself; the launcher's capture carries it to the proxy.
// For each URL argument it prints "go <url> <status>" or "go <url>
// error <what>". Built by it_clients.c at test time, with no network.
package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

func main() {
	client := &http.Client{
		Transport: &http.Transport{Proxy: nil},
		Timeout:   20 * time.Second,
	}
	for _, url := range os.Args[1:] {
		resp, err := client.Get(url)
		if err != nil {
			fmt.Printf("go %s error %v\n", url, err)
			continue
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		fmt.Printf("go %s %d %q\n", url, resp.StatusCode, string(body))
	}
}
