package app

import (
	"context"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	lvmdgrpc "github.com/plinth-dev/plinth/services/lvmd-agent/internal/grpc"
)

// discoverBucket finds the default store's bucket when PLINTH_LVMD_DEFAULT_S3_BUCKET does not
// name it: the one bucket the store lists for the agent's keys (make up's radosgw user
// plinth-lvmd owns exactly its bucket). Anything else — no answer, none or several buckets —
// leaves it unknown (""), said in the log; people then name the bucket in the path.
func discoverBucket(ctx context.Context, d *lvmdgrpc.S3Default, log *slog.Logger) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	client := s3.New(s3.Options{
		BaseEndpoint: aws.String(d.Endpoint), Region: "us-east-1", UsePathStyle: true,
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: d.AccessKeyID, SecretAccessKey: d.SecretAccessKey, Source: "PLINTH_LVMD_DEFAULT_S3"}, nil
		}),
		RetryMaxAttempts: 2,
	})
	out, err := client.ListBuckets(ctx, &s3.ListBucketsInput{})
	if err != nil {
		// The SDK's error names the endpoint and operation, never the keys.
		log.Warn("the default S3 store's bucket is unknown (set PLINTH_LVMD_DEFAULT_S3_BUCKET): listing its buckets failed", "endpoint", d.Endpoint, "error", err)
		return ""
	}
	if len(out.Buckets) != 1 {
		log.Warn("the default S3 store's bucket is unknown (set PLINTH_LVMD_DEFAULT_S3_BUCKET): its keys list other than one bucket", "endpoint", d.Endpoint, "buckets", len(out.Buckets))
		return ""
	}
	return aws.ToString(out.Buckets[0].Name)
}
