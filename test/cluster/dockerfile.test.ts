import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DockerfileError, parseDockerfile } from './dockerfile.ts';
import { contextFilter, dockerfilePath, imageConfig, localBaseOf, sharedLibraries } from './operator-image.ts';

describe('the Dockerfile as the local image builder reads it', () => {
  const stages = parseDockerfile(readFileSync(dockerfilePath, 'utf8'));

  it('has a local stand-in for every base it names, build stages on this machine and the runtime stage assembled', () => {
    expect(stages.map((s) => [s.name, localBaseOf(s.base)?.kind])).toEqual([
      ['build', 'host'],
      ['prod-deps', 'host'],
      ['2', 'rootfs'],
    ]);
  });

  it('pins every base image by digest (a tag can be moved to other content; a digest cannot)', () => {
    for (const s of stages) expect(s.base, `stage ${s.name}`).toMatch(/^[^@\s]+:[^@\s]+@sha256:[0-9a-f]{64}$/);
  });

  it('installs packages without running their install scripts (nothing pvx builds or ships needs one)', () => {
    const installs = stages.flatMap((s) => s.instructions).filter((i) => i.op === 'RUN' && /\bnpm (ci|install)\b/.test(i.command));
    expect(installs.length).toBeGreaterThan(0);
    for (const i of installs) expect(i.op === 'RUN' && i.command).toMatch(/--ignore-scripts/);
  });

  it("gives the image the Dockerfile's user, workdir, ports, entrypoint and command", () => {
    const final = stages.at(-1);
    if (!final) throw new Error('no stage');
    expect(imageConfig(final, { User: '65532', Cmd: ['node'] })).toMatchObject({
      User: 'nonroot',
      WorkingDir: '/app',
      Entrypoint: ['/nodejs/bin/node', '--optimize-for-size', 'dist/cli/main.js'],
      Cmd: ['run'],
    });
  });
});

describe('parseDockerfile', () => {
  it('joins continuations, skips comments, reads COPY --from and exec forms', () => {
    const stages = parseDockerfile(
      [
        '# syntax=docker/dockerfile:1',
        'FROM a AS one',
        'WORKDIR /src',
        'RUN echo \\',
        '  # a comment in between',
        '  two',
        'FROM b',
        'COPY --from=one /src/x ./x/',
        'USER 10',
        'EXPOSE 80 53/udp',
        'ENTRYPOINT ["/bin/x", "-v"]',
      ].join('\n'),
    );
    expect(stages).toEqual([
      {
        base: 'a',
        name: 'one',
        instructions: [
          { op: 'WORKDIR', path: '/src', line: 3 },
          { op: 'RUN', command: 'echo  two', line: 4 },
        ],
      },
      {
        base: 'b',
        name: '1',
        instructions: [
          { op: 'COPY', from: 'one', sources: ['/src/x'], dest: './x/', line: 8 },
          { op: 'USER', user: '10', line: 9 },
          { op: 'EXPOSE', ports: ['80/tcp', '53/udp'], line: 10 },
          { op: 'ENTRYPOINT', argv: ['/bin/x', '-v'], line: 11 },
        ],
      },
    ]);
  });

  it.each([
    ['an instruction the builder does not follow', 'FROM a\nENV X=1', /line 2: ENV is not understood by the local image builder/],
    ['COPY from a stage that does not exist', 'FROM a\nCOPY --from=nope /x /y', /no earlier stage has that name/],
    ['COPY with another flag', 'FROM a\nCOPY --chown=1 x /y', /only --from is understood/],
    ['a wildcard', 'FROM a\nCOPY *.json /y/', /wildcards/],
    ['ENTRYPOINT in shell form', 'FROM a\nENTRYPOINT node x.js', /exec form/],
    ['an instruction before FROM', 'RUN x', /before the first FROM/],
    ['no FROM at all', '# nothing', /no FROM/],
  ])('refuses %s, naming the line', (_, text, message) => {
    expect(() => parseDockerfile(text)).toThrow(DockerfileError);
    expect(() => parseDockerfile(text)).toThrow(message);
  });
});

describe('the build context and the runtime base', () => {
  it('.dockerignore leaves out what it names, and takes back its exceptions', () => {
    const included = contextFilter('node_modules\ntest\n# comment\nconfig\n!config/crd\n');
    expect(['src/a.ts', 'node_modules/x', 'test/e2e', 'testing.ts', 'config/rbac/r.yaml', 'config/crd/c.yaml'].filter(included)).toEqual([
      'src/a.ts',
      'testing.ts',
      'config/crd/c.yaml',
    ]);
    expect(() => contextFilter('*.md')).toThrow(/wildcards/);
  });

  it('takes the libraries ldd resolved, not the vDSO', () => {
    const ldd =
      '\tlinux-vdso.so.1 (0x00007f5e32527000)\n\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f5e31ffe000)\n\t/lib64/ld-linux-x86-64.so.2 (0x00007f5e32529000)\n';
    expect(sharedLibraries(ldd)).toEqual(['/lib/x86_64-linux-gnu/libc.so.6', '/lib64/ld-linux-x86-64.so.2']);
  });
});
