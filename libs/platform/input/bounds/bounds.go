// Package bounds is the one list of how many entries each repeated or map field of a request
// message may hold, for every API a Plinth service serves (services/gateway/routes.Table).
// Every Plinth gRPC server (libs/platform/server) refuses a request over a bound with
// InvalidArgument naming the field, before the auth hook and the handler, so nothing is
// stored; services keep their own checks of what the entries hold (a label's value, a pool's
// size). A field a client can fill and a service keeps must be listed here:
// services/gateway/routes' TestEveryRepeatedFieldIsBounded fails for a new one that is not.
//
// The numbers are far above what a real user sends and far below what would make a list
// or a page of them heavy; each says why. A field with Max 0 is bounded otherwise, and Why
// says by what.
package bounds

import (
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/plinth-dev/plinth/libs/platform/input"
)

// Bound is the bound of one repeated or map field.
type Bound struct {
	// Max is the most entries a request may carry; 0 when the field is bounded otherwise.
	Max int
	// Why explains the number, or says what bounds a field with Max 0.
	Why string
}

// Shared reasons and numbers.
const (
	// kaasPools is services/kaas/internal/cluster.MaxPools: pools of one cluster, the control
	// plane included; kaasLabels is cluster.MaxLabels.
	kaasPools, kaasLabels = 32, 32
	whyPools              = "a cluster has at most 32 pools (kaas cluster.MaxPools)"
	whyKaasLabels         = "labels of one pool (kaas cluster.MaxLabels); Kubernetes nodes carry a few dozen"

	// labels: every list of jobs carries them (vagrant jobqueue.MaxLabels).
	jobLabels    = 64
	whyJobLabels = "listed with every job (ListJobs, the console's poll); vagrant jobqueue.MaxLabels"

	// vagrantLists bounds the lists a Vagrant client or runner reports about itself (commands,
	// flags, plugins, documentation): Vagrant with every plugin has a few hundred.
	vagrantLists = 1024
	whyVagrant   = "stored with the job or runner; Vagrant with every plugin installed reports a few hundred"

	// registryLists bounds what an Upsert of a basis, project or target carries; the registry
	// derives projects, targets and subtargets itself and clears what the client sent.
	registryLists = 4096
	whyRegistry   = "a Vagrantfile's configuration or a basis' tree: thousands are beyond any real Vagrantfile"

	whyOutput = "bounded by the request size (4 MiB): a batch of a job's output from its runner, " +
		"which holds the runner's token; output is stored as it comes"

	cnpgiParams    = 256
	whyCNPGIParams = "a Cluster's plugin parameters (spec.plugins[].parameters): a handful in practice"
)

// Fields maps a field's full name ("cnct.kaas.api.CreateClusterMsg.worker_node_pools") to
// its bound.
var Fields = map[protoreflect.FullName]Bound{
	// kaas: CNCT's KaaS API.
	"cnct.kaas.api.CreateClusterMsg.worker_node_pools": {kaasPools, whyPools},
	"cnct.kaas.api.AddNodePoolMsg.worker_node_pools":   {kaasPools, whyPools},
	"cnct.kaas.api.ScaleNodePoolMsg.node_pools":        {kaasPools, whyPools},
	"cnct.kaas.api.DeleteNodePoolMsg.node_pool_names":  {kaasPools, whyPools},
	"cnct.kaas.api.MachineSpec.labels":                 {kaasLabels, whyKaasLabels},
	"cnct.kaas.api.ControlPlaneMachineSpec.labels":     {kaasLabels, whyKaasLabels},

	// lvmd-agent: TopoLVM's lvmd API.
	"proto.CreateLVRequest.tags":         {64, "LVM keeps tags in the volume group's metadata area (1 MiB by default); lvmd-agent maxTags"},
	"proto.CreateLVSnapshotRequest.tags": {64, "as proto.CreateLVRequest.tags: a snapshot is a volume"},

	// cnpgi-plugin: CloudNativePG's plugin API.
	"cnpgi.backup.v1.BackupRequest.parameters":  {cnpgiParams, whyCNPGIParams},
	"cnpgi.wal.v1.WALArchiveRequest.parameters": {cnpgiParams, whyCNPGIParams},
	"cnpgi.wal.v1.WALRestoreRequest.parameters": {cnpgiParams, whyCNPGIParams},
	"cnpgi.identity.v1.EnrichConfigurationRequest.configs": {4096,
		"PostgreSQL settings: about 360 built in, extensions add tens"},

	// vagrant-server: Vagrant's server API.
	"hashicorp.vagrant.Job.labels":                          {jobLabels, whyJobLabels},
	"hashicorp.vagrant.Job.CommandOp.labels":                {jobLabels, whyJobLabels},
	"hashicorp.vagrant.Job.data_source_overrides":           {jobLabels, "overrides of a data source's few settings (url, ref, path…); stored with the job"},
	"hashicorp.vagrant.sdk.Command.Arguments.args":          {vagrantLists, "a command line's arguments; stored with the job"},
	"hashicorp.vagrant.sdk.Command.Arguments.flags":         {vagrantLists, "a command line's flags; stored with the job"},
	"hashicorp.vagrant.Job.AuthResult.results":              {vagrantLists, whyVagrant},
	"hashicorp.vagrant.Job.DocsResult.results":              {vagrantLists, whyVagrant},
	"hashicorp.vagrant.Documentation.fields":                {vagrantLists, whyVagrant},
	"hashicorp.vagrant.Documentation.mappers":               {vagrantLists, whyVagrant},
	"hashicorp.vagrant.Job.InitResult.actions":              {vagrantLists, whyVagrant},
	"hashicorp.vagrant.Job.InitResult.commands":             {vagrantLists, whyVagrant},
	"hashicorp.vagrant.Job.InitResult.hooks":                {vagrantLists, whyVagrant},
	"hashicorp.vagrant.sdk.Command.CommandInfo.flags":       {vagrantLists, whyVagrant},
	"hashicorp.vagrant.sdk.Command.CommandInfo.subcommands": {vagrantLists, whyVagrant},
	"hashicorp.vagrant.sdk.Command.Flag.aliases":            {vagrantLists, whyVagrant},
	"hashicorp.vagrant.Runner.components":                   {vagrantLists, whyVagrant},
	"hashicorp.vagrant.sdk.Args.Hash.entries":               {registryLists, whyRegistry},
	"hashicorp.vagrant.sdk.Args.MetadataSet.metadata":       {registryLists, whyRegistry},
	"hashicorp.vagrant.Basis.projects":                      {registryLists, whyRegistry},
	"hashicorp.vagrant.Project.targets":                     {registryLists, whyRegistry},
	"hashicorp.vagrant.Target.subtargets":                   {registryLists, whyRegistry},
	// Job.error (a job's failure, from its runner): a handful of details.
	"google.rpc.Status.details": {64, "details of one error (google.rpc.Status); APIs attach one or two"},
	// Box metadata (UpsertBox), stored with the box.
	"google.protobuf.Struct.fields":                                            {registryLists, "a box's JSON metadata, stored with the box; " + whyRegistry},
	"google.protobuf.ListValue.values":                                         {registryLists, "a box's JSON metadata, stored with the box; " + whyRegistry},
	"hashicorp.vagrant.GetJobStreamResponse.Terminal.events":                   {0, whyOutput},
	"hashicorp.vagrant.GetJobStreamResponse.Terminal.Event.NamedValues.values": {0, whyOutput},
	"hashicorp.vagrant.GetJobStreamResponse.Terminal.Event.Table.headers":      {0, whyOutput},
	"hashicorp.vagrant.GetJobStreamResponse.Terminal.Event.Table.rows":         {0, whyOutput},
	"hashicorp.vagrant.GetJobStreamResponse.Terminal.Event.TableRow.entries":   {0, whyOutput},
}

// Max is the most entries field fd may hold in a request; 0 means no count bound here.
func Max(fd protoreflect.FieldDescriptor) int { return Fields[fd.FullName()].Max }

// Check refuses the first list or map field of m (nested messages included) that holds more
// entries than its bound, with an *input.Error naming the field's path, e.g.
// "worker_node_pools[2].labels".
func Check(m protoreflect.Message) error {
	return input.Walk(m, func(fd protoreflect.FieldDescriptor, v protoreflect.Value, path string) error {
		switch {
		case fd.IsList():
			return count(fd, v.List().Len(), path)
		case fd.IsMap():
			return count(fd, v.Map().Len(), path)
		}
		return nil
	})
}

func count(fd protoreflect.FieldDescriptor, n int, name string) error {
	if max := Max(fd); max > 0 && n > max {
		return input.Invalid(name, "has %d entries; at most %d are allowed", n, max)
	}
	return nil
}
