// Plain-text tables for CLI output, in kubectl's style: upper-case headers, columns padded with
// three spaces, no borders, so the output greps and cuts like kubectl's. Shared by the commands
// that print tables (status, audit).

/** Left-aligned columns; the last column is not padded, so lines carry no trailing spaces. */
export function formatTable(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const all = [headers, ...rows];
  const columns = Math.max(...all.map((r) => r.length));
  const widths = Array.from({ length: columns }, (_, i) => Math.max(...all.map((r) => (r[i] ?? '').length)));
  return all
    .map((row) =>
      Array.from({ length: columns }, (_, i) => (i === columns - 1 ? (row[i] ?? '') : (row[i] ?? '').padEnd(widths[i] as number)))
        .join('   ')
        .trimEnd(),
    )
    .join('\n');
}
