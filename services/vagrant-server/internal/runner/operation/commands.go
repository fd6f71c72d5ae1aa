package operation

import (
	"context"
	"fmt"
	"strings"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant/sdk"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/provider"
)

// command is one machine command the runner executes.
type command struct {
	info *sdk.Command_CommandInfo
	// run acts on the machine and returns the exit status `vagrant <command>` would have.
	run func(ctx context.Context, m *machine, c call) (exitCode int, err error)
}

// call is what a command run gets besides the machine.
type call struct {
	args *sdk.Command_Arguments
	env  []string
	out  Output
}

// commands is the runner's command table, in the order Init lists it.
func commands() []command {
	return []command{
		{info: &sdk.Command_CommandInfo{Name: "up", Primary: true,
			Synopsis: "starts the machine, creating it first when needed",
			Help:     "Usage: vagrant up\n\nCreates the target's machine through its provider when it does not exist, then starts it."},
			run: func(ctx context.Context, m *machine, c call) (int, error) { return exitOf(m.provider.Up(ctx, m.id)) }},
		{info: &sdk.Command_CommandInfo{Name: "halt", Primary: true,
			Synopsis: "stops the machine",
			Help:     "Usage: vagrant halt\n\nStops every process in the machine and keeps it, so `up` starts it again as it was."},
			run: func(ctx context.Context, m *machine, c call) (int, error) { return exitOf(m.provider.Halt(ctx, m.id)) }},
		{info: &sdk.Command_CommandInfo{Name: "destroy", Primary: true,
			Synopsis: "stops and deletes all traces of the machine",
			Help:     "Usage: vagrant destroy\n\nStops the machine and removes it and everything its provider created for it."},
			run: func(ctx context.Context, m *machine, c call) (int, error) {
				return exitOf(m.provider.Destroy(ctx, m.id))
			}},
		{info: &sdk.Command_CommandInfo{Name: "reload", Primary: true,
			Synopsis: "restarts the machine",
			Help:     "Usage: vagrant reload\n\nHalts the machine, then brings it up again."},
			run: func(ctx context.Context, m *machine, c call) (int, error) {
				if err := m.provider.Halt(ctx, m.id); err != nil {
					return 1, err
				}
				return exitOf(m.provider.Up(ctx, m.id))
			}},
		{info: &sdk.Command_CommandInfo{Name: "status", Primary: true,
			Synopsis: "outputs the state of the machine",
			Help:     "Usage: vagrant status\n\nReports the machine's state as its provider sees it."},
			run: func(context.Context, *machine, call) (int, error) { return 0, nil }}, // the report after every command says it
		{info: &sdk.Command_CommandInfo{Name: "ssh", Primary: true,
			Synopsis: "runs a shell command in the machine",
			Help: "Usage: vagrant ssh -c COMMAND\n\nRuns COMMAND with /bin/sh inside the running machine and streams its output. " +
				"Jobs have no terminal, so -c is required.",
			Flags: []*sdk.Command_Flag{{LongName: "command", ShortName: "c", Type: sdk.Command_Flag_STRING,
				Description: "the shell command to run in the machine"}}},
			run: func(ctx context.Context, m *machine, c call) (int, error) {
				script, ok := stringFlag(c.args, "command", "c")
				if !ok || strings.TrimSpace(script) == "" {
					return 1, errUsage("ssh needs -c COMMAND: a job has no interactive terminal")
				}
				return m.exec(ctx, []string{"/bin/sh", "-c", script}, c)
			}},
		{info: &sdk.Command_CommandInfo{Name: "exec", Primary: false,
			Synopsis: "runs a program in the machine",
			Help:     "Usage: vagrant exec PROGRAM [ARGS...]\n\nRuns PROGRAM with ARGS, as given (no shell), inside the running machine."},
			run: func(ctx context.Context, m *machine, c call) (int, error) {
				if len(c.args.GetArgs()) == 0 {
					return 1, errUsage("exec needs a program to run: pass it and its arguments as args")
				}
				return m.exec(ctx, c.args.GetArgs(), c)
			}},
	}
}

// findCommand returns the command called name.
func findCommand(name string) (command, bool) {
	for _, c := range commands() {
		if c.info.Name == name {
			return c, true
		}
	}
	return command{}, false
}

// commandNames lists the commands for error messages.
func commandNames() string {
	var names []string
	for _, c := range commands() {
		names = append(names, c.info.Name)
	}
	return strings.Join(names, ", ")
}

// exec runs argv in the machine with the job's environment, streaming its output.
func (m *machine) exec(ctx context.Context, argv []string, c call) (int, error) {
	stdout, stderr := newRawWriter(c.out, false), newRawWriter(c.out, true)
	code, err := m.provider.Exec(ctx, m.id, provider.Command{Args: argv, Env: c.env, Stdout: stdout, Stderr: stderr})
	_ = stdout.Close()
	_ = stderr.Close()
	if err != nil && code < 0 {
		code = 1
	}
	return code, err
}

// exitOf is the exit status of a command that only called its provider.
func exitOf(err error) (int, error) {
	if err != nil {
		return 1, err
	}
	return 0, nil
}

// stringFlag returns the value of the string flag called one of names.
func stringFlag(args *sdk.Command_Arguments, names ...string) (string, bool) {
	for _, f := range args.GetFlags() {
		for _, n := range names {
			if f.GetName() == n {
				if s, ok := f.GetValue().(*sdk.Command_Arguments_Flag_String_); ok {
					return s.String_, true
				}
			}
		}
	}
	return "", false
}

// usageError is a command called the wrong way: the job, not the machine, is at fault.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func errUsage(format string, args ...any) error { return usageError{msg: fmt.Sprintf(format, args...)} }

// physicalState is the target state a machine state stands for.
func physicalState(st provider.State, destroyed bool) vagrant.Operation_PhysicalState {
	switch {
	case destroyed && st.ID == provider.StateNotCreated:
		return vagrant.Operation_DESTROYED
	case st.ID == provider.StateRunning:
		return vagrant.Operation_CREATED
	case st.ID == provider.StatePoweroff:
		return vagrant.Operation_HALTED
	case st.ID == provider.StateNotCreated:
		return vagrant.Operation_NOT_CREATED
	}
	return vagrant.Operation_UNKNOWN
}
