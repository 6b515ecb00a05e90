// The plugins write info and debug lines to stderr as well as to their log file (docs/logging.md): a test that
// means "no fallback, no warnings" asserts that stderr has nothing else.
/** The lines of `stderr` that are not info or debug log lines (warnings, errors, anything else). */
export function notInfo(stderr: string): string[] {
  return stderr.split('\n').filter((l) => l !== '' && !/^\S+ \[(INFO|DEBUG)\]\[\d+\] /.test(l))
}
