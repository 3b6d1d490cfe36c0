/**
 * When a drawn arrow's label is written as a badge instead of its lines: past two guards, or with a
 * line longer than a glance reads, the lines crowd the chart (the tool-call chart's screening step has
 * eleven guarded ways to `writing_result`), so the arrow carries a short summary and the page shows
 * the full list on hover or focus. Shared by the layout, which sizes the label, and the page.
 */
const MAX_GUARDS = 2;
const MAX_LINE = 40;
const MAX_EVENTS = 28;

/** The badge's text for a route with these member labels (`event [guard]`), or null to write them out. */
export function routeBadge(labels: readonly string[]): string | null {
  const guards = labels.filter((l) => l.includes(' [')).length;
  if (guards <= MAX_GUARDS && labels.every((l) => l.length <= MAX_LINE)) return null;
  const events = [...new Set(labels.map((l) => l.split(' [')[0]!))].join(', ');
  const count = guards === labels.length ? `${guards} guard${guards === 1 ? '' : 's'}` : `${labels.length} transitions`;
  return events.length <= MAX_EVENTS ? `${events} · ${count}` : count;
}
