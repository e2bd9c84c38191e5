package readme

import (
	"os"
	"strings"
	"testing"
)

const sample = "# keb\n\n```sh\nmake run\n```\n\n" +
	"## Your first runtime\n\ntext\n\n" +
	"```sh\necho one\n```\n```text\none\n```\n\n" +
	"### Second\n\n<!-- readme-test: unordered -->\n```sh\necho b; echo a\n```\n```text\nb\na\n```\n\n" +
	"A log excerpt:\n\n```\n```sh\n```\n\n" +
	"<!-- readme-test: skip needs a restart -->\n```sh\necho skipped\n```\n```text\nold\n```\n\n" +
	"```sh\ntrue\n```\n\n" +
	"## Tests\n\n```sh\nmake test\n```\n"

// TestParse: only the walkthrough's ```sh blocks, each with the ```text block right after it as its output,
// its section and its directive; fenced blocks of other kinds are passed over whole.
func TestParse(t *testing.T) {
	t.Parallel()
	blocks, err := Parse("README.md", sample)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		section, script, output string
		unordered               bool
		skip                    string
	}{
		{section: "Your first runtime", script: "echo one\n", output: "one"},
		{section: "Second", script: "echo b; echo a\n", output: "b\na", unordered: true},
		{section: "Second", script: "echo skipped\n", output: "old", skip: "needs a restart"},
		{section: "Second", script: "true\n"},
	}
	if len(blocks) != len(want) {
		t.Fatalf("got %d blocks, want %d: %+v", len(blocks), len(want), blocks)
	}
	for i, w := range want {
		b := blocks[i]
		if b.Section != w.section || b.Script != w.script || strings.Join(b.Output, "\n") != w.output ||
			b.Unordered != w.unordered || b.Skip != w.skip {
			t.Errorf("block %d = %+v, want %+v", i, b, w)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, readme, want string }{
		{name: "no walkthrough", readme: "# keb\n", want: "no \"## Your first runtime"},
		{name: "unclosed", readme: "## Your first runtime\n```sh\necho\n", want: "never closed"},
		{name: "unknown directive", readme: "## Your first runtime\n<!-- readme-test: sometimes -->\n```sh\necho\n```\n", want: "unknown directive"},
		{name: "skip without reason", readme: "## Your first runtime\n<!-- readme-test: skip -->\n```sh\necho\n```\n", want: "must say why"},
		{name: "restart the text does not tell", readme: "## Your first runtime\n### S\nRestart `make run`.\n<!-- readme-test: restart APP_X=1 -->\n```sh\necho\n```\n",
			want: "does not say `APP_X=1 make run`"},
		{name: "restart with a flag", readme: "## Your first runtime\n<!-- readme-test: restart --port=1 -->\n```sh\necho\n```\n", want: "NAME=VALUE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if _, err := Parse("README.md", tc.readme); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse: %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// TestParseRestart: a restart's settings (next to another directive), when the section's text gives the reader the same command.
func TestParseRestart(t *testing.T) {
	t.Parallel()
	blocks, err := Parse("README.md", "## Your first runtime\n### S\nStart it again as `APP_X=1 APP_Y=a=b make run`.\n\n"+
		"<!-- readme-test: restart APP_X=1 APP_Y=a=b -->\n<!-- readme-test: unordered -->\n```sh\necho\n```\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 1 || strings.Join(blocks[0].Restart, " ") != "APP_X=1 APP_Y=a=b" || !blocks[0].Unordered {
		t.Fatalf("blocks %+v, want one restarting with APP_X=1 APP_Y=a=b, unordered", blocks)
	}
}

// TestRewrite: new outputs replace the pasted ones (blank lines dropped), an output appears where there was
// none and goes where a block now prints nothing; a skipped block keeps its own; the rest is untouched.
func TestRewrite(t *testing.T) {
	t.Parallel()
	blocks, err := Parse("README.md", sample)
	if err != nil {
		t.Fatal(err)
	}
	got := Rewrite(sample, blocks, [][]string{{"uno", "", "  "}, {""}, nil, {"new"}})
	want := strings.NewReplacer(
		"```sh\necho one\n```\n```text\none\n```", "```sh\necho one\n```\n```text\nuno\n```",
		"```sh\necho b; echo a\n```\n```text\nb\na\n```", "```sh\necho b; echo a\n```",
		"```sh\ntrue\n```\n", "```sh\ntrue\n```\n```text\nnew\n```\n",
	).Replace(sample)
	if got != want {
		t.Fatalf("Rewrite:\n%s\nwant:\n%s", got, want)
	}
	again, err := Parse("README.md", got)
	if err != nil || len(again) != len(blocks) {
		t.Fatalf("the rewritten README parses to %d blocks (%v), want %d", len(again), err, len(blocks))
	}
}

// TestCompare: what differs from run to run is masked, a changed word or line is not.
func TestCompare(t *testing.T) {
	t.Parallel()
	pasted := []string{
		`{"state":"in progress","description":"Waiting for the cluster c-2bda2b8 to be created"}`,
		`{"state":"succeeded","description":"Operation succeeded: the Kyma runtime is ready"}`,
		`INSTANCE                               RUNTIME   AGE`,
		`5ac715d7-d78d-414e-9977-19097ab3abfa   c-2bda2b8   15s`,
		`Date: Thu, 26 Nov 2026 08:21:31 GMT`,
		`    server: https://127.0.0.1:44567`,
		`"expires_at":"2026-11-26T08:52:31Z" user: keb-binding-13a5ce9da6a19421 08:12:59`,
	}
	run := []string{
		`{"state":"succeeded","description":"Operation succeeded: the Kyma runtime is ready"}`,
		``,
		`INSTANCE                               RUNTIME     AGE`,
		`0d947966-2ebc-4e87-9a56-f1e845641752   c-0d94796   2m`,
		`Date: Fri, 27 Nov 2026 18:01:02 GMT`,
		`    server: https://127.0.0.1:39001`,
		`"expires_at":"2026-11-27T18:31:02.5Z" user: keb-binding-0123456789abcdef 18:01:02`,
	}
	if d := Compare(pasted, run, false); d != "" {
		t.Errorf("runs differing only in masked values differ:\n%s", d)
	}
	changed := append([]string{}, run...)
	changed[1] = `{"state":"failed","description":"Operation failed"}`
	if d := Compare(pasted, changed, false); !strings.Contains(d, `+ {"state":"failed"`) {
		t.Errorf("an extra line: diff %q, want it shown", d)
	}
	changed = append([]string{}, run...)
	changed[3] = strings.Replace(changed[3], "c-0d94796", "my-runtime", 1)
	if d := Compare(pasted, changed, false); !strings.Contains(d, "- <uuid> <shoot> <age>") || !strings.Contains(d, "+ <uuid> my-runtime <age>") {
		t.Errorf("a changed word: diff %q, want both lines shown", d)
	}
	swapped := []string{run[3], run[2]}
	if Compare(pasted[2:4], swapped, false) == "" || Compare(pasted[2:4], swapped, true) != "" {
		t.Error("order matters unless unordered")
	}
}

// TestREADMEParses keeps README.md and every guide chapter readable by the runner, in every `go test` run.
func TestREADMEParses(t *testing.T) {
	t.Parallel()
	paths := documents(t)
	if len(paths) < 8 {
		t.Fatalf("README.md and %d guide chapters; want the guide's chapters too", len(paths)-1)
	}
	total := 0
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		blocks, err := Parse(docName(p), string(raw))
		if err != nil {
			t.Fatal(err)
		}
		if len(blocks) == 0 && !strings.Contains(string(raw), "```sh") {
			continue // a chapter of prose only
		}
		total += len(blocks)
	}
	if total < 50 {
		t.Fatalf("README.md and the guide have %d blocks; the parser lost some", total)
	}
}

// TestParseChapter: a guide chapter runs whole, its sections are its headings of any level, and a failure
// names the chapter's file.
func TestParseChapter(t *testing.T) {
	t.Parallel()
	blocks, err := Parse("docs/guide/x.md", "# X\n\n```sh\necho 1\n```\n## Y\n```sh\necho 2\n```\n```text\n2\n```\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 2 || blocks[0].Name() != "docs/guide/x.md:3 (X)" || blocks[1].Name() != "docs/guide/x.md:7 (Y)" {
		t.Fatalf("blocks %+v", blocks)
	}
	if _, err := Parse("docs/guide/x.md", "# X\n```sh\necho\n"); err == nil || !strings.Contains(err.Error(), "docs/guide/x.md:2") {
		t.Fatalf("Parse: %v, want the chapter's file and line", err)
	}
}

// A dev pool account's number is masked (which one a runtime gets depends on earlier chapters),
// its type and the rest of the line are not.
func TestMaskPoolAccountNumbers(t *testing.T) {
	got := mask("azure   azure-dev-03   dirty   ga-doomed; keb pool: account aws-dev-12 is used; aws-eu-01 azure-shared-01")
	want := "azure azure-dev-<n> dirty ga-doomed; keb pool: account aws-dev-<n> is used; aws-eu-01 azure-shared-01"
	if got != want {
		t.Errorf("mask:\n got %q\nwant %q", got, want)
	}
}
