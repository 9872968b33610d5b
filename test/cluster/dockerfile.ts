// The Dockerfile read as a recipe: its stages and their instructions, for the local image builder
// (operator-image.ts), which follows it step by step instead of restating it. Only the
// instructions pvx's Dockerfile uses are understood; any other is an error naming its line, so a
// Dockerfile that grows past what the builder does fails the build instead of drifting from it.

export type Instruction =
  | { op: 'WORKDIR'; path: string; line: number }
  | { op: 'COPY'; from?: string; sources: string[]; dest: string; line: number }
  | { op: 'RUN'; command: string; line: number }
  | { op: 'USER'; user: string; line: number }
  | { op: 'EXPOSE'; ports: string[]; line: number }
  | { op: 'ENTRYPOINT' | 'CMD'; argv: string[]; line: number };

export interface Stage {
  /** The image it starts from, as written. */
  base: string;
  /** Its name (FROM … AS name), or its index as a string. */
  name: string;
  instructions: Instruction[];
}

export class DockerfileError extends Error {}

/** Logical lines (continuations joined, comments and blank lines dropped), each with its first line number. */
function logicalLines(text: string): { text: string; line: number }[] {
  const out: { text: string; line: number }[] = [];
  let pending: { text: string; line: number } | undefined;
  text.split('\n').forEach((raw, i) => {
    const trimmed = raw.trim();
    if (!pending && (trimmed === '' || trimmed.startsWith('#'))) return;
    if (pending && trimmed.startsWith('#')) return; // a comment inside a continuation
    const continued = trimmed.endsWith('\\');
    const body = continued ? trimmed.slice(0, -1) : trimmed;
    pending = pending ? { text: `${pending.text} ${body}`, line: pending.line } : { text: body, line: i + 1 };
    if (!continued) {
      out.push(pending);
      pending = undefined;
    }
  });
  if (pending) throw new DockerfileError(`line ${pending.line}: the last instruction ends with a line continuation`);
  return out;
}

/** ENTRYPOINT and CMD in exec form (a JSON array of strings); the shell form needs a shell the runtime image lacks. */
function execForm(args: string, line: number, op: string): string[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(args);
  } catch {
    parsed = undefined;
  }
  if (!Array.isArray(parsed) || !parsed.every((a) => typeof a === 'string')) {
    throw new DockerfileError(`line ${line}: ${op} must be in exec form (a JSON array of strings): ${args}`);
  }
  return parsed;
}

export function parseDockerfile(text: string): Stage[] {
  const stages: Stage[] = [];
  for (const { text: l, line } of logicalLines(text)) {
    const m = /^(\S+)\s*(.*)$/.exec(l);
    const op = (m?.[1] ?? '').toUpperCase();
    const args = (m?.[2] ?? '').trim();
    if (op === 'FROM') {
      const from = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(args);
      if (!from) throw new DockerfileError(`line ${line}: FROM ${args}: expected "FROM image [AS name]"`);
      stages.push({ base: from[1] as string, name: from[2] ?? String(stages.length), instructions: [] });
      continue;
    }
    const stage = stages.at(-1);
    if (!stage) throw new DockerfileError(`line ${line}: ${op} before the first FROM`);
    stage.instructions.push(instruction(op, args, line, stages));
  }
  if (stages.length === 0) throw new DockerfileError('no FROM: the Dockerfile has no stage');
  return stages;
}

function instruction(op: string, args: string, line: number, stages: Stage[]): Instruction {
  switch (op) {
    case 'WORKDIR':
      if (!args.startsWith('/')) throw new DockerfileError(`line ${line}: WORKDIR ${args}: only absolute paths are understood`);
      return { op, path: args, line };
    case 'COPY': {
      const words = args.split(/\s+/);
      let from: string | undefined;
      while (words[0]?.startsWith('--')) {
        const flag = words.shift() as string;
        const fromFlag = /^--from=(.+)$/.exec(flag);
        if (!fromFlag) throw new DockerfileError(`line ${line}: COPY ${flag}: only --from is understood`);
        from = fromFlag[1];
        if (!stages.slice(0, -1).some((s) => s.name === from)) throw new DockerfileError(`line ${line}: COPY --from=${from}: no earlier stage has that name`);
      }
      if (words.length < 2) throw new DockerfileError(`line ${line}: COPY ${args}: expected sources and a destination`);
      const dest = words.pop() as string;
      if (words.some((w) => /[*?[]/.test(w))) throw new DockerfileError(`line ${line}: COPY ${args}: wildcards are not understood`);
      return { op, ...(from ? { from } : {}), sources: words, dest, line };
    }
    case 'RUN':
      if (args.startsWith('[')) throw new DockerfileError(`line ${line}: RUN in exec form is not understood; use the shell form`);
      return { op, command: args, line };
    case 'USER':
      return { op, user: args, line };
    case 'EXPOSE':
      return { op, ports: args.split(/\s+/).map((p) => (p.includes('/') ? p : `${p}/tcp`)), line };
    case 'ENTRYPOINT':
    case 'CMD':
      return { op, argv: execForm(args, line, op), line };
    default:
      throw new DockerfileError(
        `line ${line}: ${op} is not understood by the local image builder (test/cluster/operator-image.ts); teach it ${op}, or keep the Dockerfile to WORKDIR, COPY, RUN, USER, EXPOSE, ENTRYPOINT and CMD`,
      );
  }
}
