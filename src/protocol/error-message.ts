/** The message of anything thrown: an Error's own, anything else as text. Shared by the charts and the code that provides them. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
