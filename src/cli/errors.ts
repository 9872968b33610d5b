// The two ways a command fails without a stack trace (src/cli/main.ts prints the message alone).

/** A command-line mistake: exit code 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** A failure the user can act on (unreachable cluster, missing CRD, refused permission): exit code 1. */
export class CommandFailure extends Error {
  override name = 'CommandFailure';
}
