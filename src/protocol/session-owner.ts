/** Who holds a session: one runtime, in one process on one host. */
export interface OwnerIdentity {
  ownerId: string;
  host: string;
  pid: number;
}

/** The holder of a live lease, as another runtime sees it. */
export interface LeaseHolder extends OwnerIdentity {
  expiresAtMs: number;
  /** How long the lease still runs, measured on the database's clock when it was read. */
  remainingMs: number;
}
