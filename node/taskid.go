package node

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/nodeid/nodeid/nodeid"
)

// ECSMetadataEnv is set by the ECS agent in every container (task metadata
// endpoint version 4: EC2 agent 1.39+, Fargate platform 1.4+).
const ECSMetadataEnv = "ECS_CONTAINER_METADATA_URI_V4"

// ecsMetadataTimeout bounds the metadata request: the endpoint is local to the
// task and answers in milliseconds.
const ecsMetadataTimeout = 2 * time.Second

// TaskID returns this process's task identity for Provider.TaskID: the ECS
// task ARN when running in an ECS task (ECSTaskARN), else
// nodeid.DefaultTaskID (host name, pid and random bytes). A failing metadata
// request is logged on log (nil: not logged) and falls back: any string
// unique among live tasks is a valid identity.
func TaskID(ctx context.Context, log *slog.Logger) string {
	if uri := os.Getenv(ECSMetadataEnv); uri != "" {
		arn, err := ECSTaskARN(ctx, uri)
		if err == nil {
			return arn
		}
		if log != nil {
			log.Warn("no task ARN from the ECS task metadata endpoint; using host, pid and random bytes", "err", err)
		}
	}
	return nodeid.DefaultTaskID()
}

// ECSTaskARN reads TaskARN from GET <baseURI>/task, baseURI being the value
// of ECS_CONTAINER_METADATA_URI_V4.
func ECSTaskARN(ctx context.Context, baseURI string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, ecsMetadataTimeout)
	defer cancel()
	url := strings.TrimRight(baseURI, "/") + "/task"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", fmt.Errorf("%s=%q: %w", ECSMetadataEnv, baseURI, err)
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
