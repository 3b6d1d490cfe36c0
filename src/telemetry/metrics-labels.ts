/** What a label value becomes once its label has reached its cap of distinct values. */
const OTHER_LABEL = 'other';

/**
 * The distinct values one label may take (issue 27). Agent names come from configuration, but tool
 * names grow with what MCP servers announce and model ids are whatever a provider answers: every new
 * value is a new time series in every scraper, kept for as long as the process lives. The first `cap`
 * values are kept as they are, anything later is `other`; a value is also cut to `maxLength`
 * characters, so a provider's odd id cannot make a label of any size.
 */
export class BoundedLabel {
  private readonly seen = new Set<string>();

  constructor(
    private readonly cap: number,
    private readonly maxLength = 100,
  ) {}

  /** The value to label with: itself while there is room (or it was seen before), `other` after. */
  of(value: string | undefined): string {
    if (value === undefined || value === '') return 'unknown';
    const cut = value.length > this.maxLength ? value.slice(0, this.maxLength) : value;
    if (this.seen.has(cut)) return cut;
    if (this.seen.size >= this.cap) return OTHER_LABEL;
    this.seen.add(cut);
    return cut;
  }
}
