package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/nodeid/nodeid/nodeid"
)

// ecsMetadataEnv is set by the ECS agent in every container (task metadata
// endpoint version 4: EC2 agent 1.39+, Fargate platform 1.4+).
const ecsMetadataEnv = "ECS_CONTAINER_METADATA_URI_V4"

// ecsMetadataTimeout bounds the metadata request: the endpoint is local to the
// task and answers in milliseconds.
const ecsMetadataTimeout = 2 * time.Second

// resolveTaskID returns the broker's task identity: --task-id if set, else the
// ECS task ARN from the task metadata endpoint, else nodeid.DefaultTaskID (host
// name, pid and random bytes). A failing metadata request is logged and falls
// back: any unique string is a valid identity.
func resolveTaskID(ctx context.Context, flagValue string, lookupEnv func(string) (string, bool), log *slog.Logger) string {
	if flagValue != "" {
		return flagValue
	}
	if uri, ok := lookupEnv(ecsMetadataEnv); ok && uri != "" {
		arn, err := ecsTaskARN(ctx, uri)
		if err == nil {
			return arn
		}
		log.Warn("no task ARN from the ECS task metadata endpoint; using host, pid and random bytes", "err", err)
	}
	return nodeid.DefaultTaskID()
}

// ecsTaskARN reads TaskARN from GET ${ECS_CONTAINER_METADATA_URI_V4}/task.
func ecsTaskARN(ctx context.Context, baseURI string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, ecsMetadataTimeout)
	defer cancel()
	url := strings.TrimRight(baseURI, "/") + "/task"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", fmt.Errorf("%s=%q: %w", ecsMetadataEnv, baseURI, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", fmt.Errorf("GET %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: HTTP %d", url, resp.StatusCode)
	}
	var task struct {
		TaskARN string `json:"TaskARN"`
	}
	if err := json.Unmarshal(body, &task); err != nil {
		return "", fmt.Errorf("GET %s: %w", url, err)
	}
	if task.TaskARN == "" {
		return "", fmt.Errorf("GET %s: no TaskARN in the answer", url)
	}
	return task.TaskARN, nil
}
