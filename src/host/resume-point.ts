/**
 * Where an event stream resumes (the session's updates, the inspector's): `Last-Event-ID` wins over
 * `?after`; anything that is not a sequence number counts as no resume point.
 */
export function resumePoint(lastEventId: string | undefined, after: number | undefined): number | null {
  if (lastEventId !== undefined && /^\d{1,15}$/.test(lastEventId.trim())) return Number(lastEventId.trim());
  return after ?? null;
}
