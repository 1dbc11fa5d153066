package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/host"
)

func (a *app) templatesCommand() *cobra.Command {
	return a.hostable(&cobra.Command{
		Use:   "templates [flags] " + serverArgs,
		Short: "List the server's resource templates",
		Long:  "List the server's resource templates (resources/templates/list): one per line, URI template, name and the first line of its description. With --json, the JSON array of templates.",
	}, a.runTemplates, a.hostTemplates)
}

func (a *app) runTemplates(cmd *cobra.Command, args, server []string) error {
	if err := noArgs(args); err != nil {
		return err
	}
	return a.session(cmd.Context(), server, func(ctx context.Context, c *conduit.Client) error {
		templates, err := c.ListResourceTemplates(ctx)
		if err != nil {
			return err
		}
		if a.opts.json {
			return a.printJSON(nonNil(templates))
		}
		return a.table(templateRows(templates))
	})
}

func (a *app) hostTemplates(ctx context.Context, args []string, h *host.Host) error {
	templates, err := h.ResourceTemplates(ctx)
	if err != nil {
		return err
	}
	if a.opts.json {
		return a.printJSON(nonNil(templates))
	}
	return a.table(func(w io.Writer) {
		for _, t := range templates {
			fmt.Fprintf(w, "%s\t", oneLine(t.Server))
			templateRows([]conduit.ResourceTemplate{t.ResourceTemplate})(w)
		}
	})
}

// templateRows are the lines of conduit templates: URI template, name,
// description.
func templateRows(templates []conduit.ResourceTemplate) func(io.Writer) {
	return func(w io.Writer) {
		for _, t := range templates {
			fmt.Fprintf(w, "%s\t%s\t%s\n", oneLine(t.URITemplate), oneLine(t.Name), firstLine(t.Description))
		}
	}
}

func (a *app) completeCommand() *cobra.Command {
	var prompt, resource string
	var resolved []string
	c := a.command(&cobra.Command{
		Use:   "complete [flags] (--prompt NAME | --resource TEMPLATE) ARG VALUE " + serverArgs,
		Short: "Complete an argument of a prompt or a resource template",
		Long: `Ask the server for the completions of the argument ARG of the prompt NAME
(--prompt) or of the resource template TEMPLATE (--resource), given VALUE typed
so far (completion/complete), and print them, one per line (each on one line,
without escape sequences and control characters, as the lists are); "(more)"
on stderr when the server has more than it sent. With --json, the whole CompleteResult.
--context NAME=VALUE gives an argument already resolved (repeatable).
With --config FILE, the first argument is the SERVER of FILE to ask.`,
		Example: `  conduit complete --prompt completable-prompt department E -- everything-server
  conduit complete --resource 'demo://resource/dynamic/text/{resourceId}' resourceId 1 -- everything-server
  conduit complete --config servers.json everything --prompt completable-prompt department E`,
	}, func(cmd *cobra.Command, args, server []string) error {
		if a.opts.config != "" {
			if err := a.configOnly(server); err != nil {
				return err
			}
			if len(args) == 0 {
				return usagef("missing SERVER: conduit complete --config FILE SERVER (--prompt NAME | --resource TEMPLATE) ARG VALUE")
			}
			cfg, err := a.readConfig(newLogger(a.stderr, a.opts.verbose, a.opts.json))
			if err != nil {
				return err
			}
			s, ok := cfg.Servers[args[0]]
			switch {
			case !ok:
				return usagef("no server %q in the configuration: its servers are %s", args[0], strings.Join(slices.Sorted(maps.Keys(cfg.Servers)), ", "))
			case s.Conduit.Disabled:
				return usagef("server %q is disabled in %s", args[0], a.opts.config)
			}
			a.target = &configTarget{cfg: cfg, name: args[0]}
			args = args[1:]
		}
		return a.runComplete(cmd, args, server, prompt, resource, resolved)
	})
	c.Flags().StringVar(&prompt, "prompt", "", "complete an argument of the prompt `NAME`")
	c.Flags().StringVar(&resource, "resource", "", "complete a variable of the resource template `TEMPLATE` (as conduit templates lists it)")
	c.Flags().StringArrayVar(&resolved, "context", nil, "an argument already resolved, `NAME=VALUE` (repeatable)")
	a.configFlag(c, "use a server of the configuration `FILE` (mcpServers or VS Code servers), named as the first argument, in place of --url or -- COMMAND; only that server is started")
	return c
}

func (a *app) runComplete(cmd *cobra.Command, args, server []string, prompt, resource string, resolved []string) error {
	var ref conduit.CompleteReference
	switch {
	case prompt != "" && resource != "":
		return usagef("give --prompt NAME or --resource TEMPLATE, not both")
	case prompt != "":
		ref = conduit.PromptRef(prompt)
	case resource != "":
		ref = conduit.ResourceRef(resource)
	default:
		return usagef("missing --prompt NAME or --resource TEMPLATE")
	}
	switch {
	case len(args) < 2:
		return usagef("missing ARG VALUE: conduit complete (--prompt NAME | --resource TEMPLATE) ARG VALUE %s", serverArgs)
	case len(args) > 2:
		return usagef("too many arguments before --: %q (put the server command after --)", args[2:])
	}
	p := conduit.CompleteParams{Ref: ref, Argument: conduit.CompleteArgument{Name: args[0], Value: args[1]}}
	if len(resolved) > 0 {
		p.Context = &conduit.CompleteContext{Arguments: map[string]string{}}
		for _, kv := range resolved {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return usagef("--context %q: want NAME=VALUE", kv)
			}
			p.Context.Arguments[k] = v
		}
	}
	return a.session(cmd.Context(), server, func(ctx context.Context, c *conduit.Client) error {
		res, err := c.Complete(ctx, p)
		if err != nil {
			return err
		}
		if a.opts.json {
			return a.printJSON(res)
		}
		var b strings.Builder
		for _, v := range res.Completion.Values {
			b.WriteString(oneLine(v))
			b.WriteByte('\n')
		}
		if res.Completion.HasMore {
			fmt.Fprintln(a.stderr, "(more)")
		}
		return a.write([]byte(b.String()))
	})
}
