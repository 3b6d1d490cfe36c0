import { Observable, Subscriber, type Observer, type Operator, type Subscription } from 'rxjs';

export interface IsolationHooks {
  /** A subscriber's callback threw: reported here instead of being rethrown. */
  onError: (error: unknown) => void;
  /** +1 when a subscription starts at the source, -1 when it ends. */
  onCount?: (delta: number) => void;
}

/**
 * An observable whose subscribers cannot hurt the producer or each other. RxJS reports an exception
 * thrown by a subscriber (or left unhandled by an operator chain) on a later tick, where it becomes
 * an uncaught exception that ends the process; here every callback a user hands to `subscribe` —
 * directly or at the end of a `pipe` — runs inside a guard that reports the error and carries on.
 */
export function isolated<T>(source: Observable<T>, hooks: IsolationHooks): Observable<T> {
  return new IsolatedObservable<T>((subscriber) => {
    hooks.onCount?.(1);
    const inner = source.subscribe(subscriber);
    return () => {
      inner.unsubscribe();
      hooks.onCount?.(-1);
    };
  }, hooks);
}

class IsolatedObservable<T> extends Observable<T> {
  constructor(
    subscribe: (this: Observable<T>, subscriber: Subscriber<T>) => () => void,
    private readonly hooks: IsolationHooks,
  ) {
    super(subscribe);
  }

  // Operators build their result through `lift`: returning this class keeps the guard at the end of any pipe.
  override lift<R>(operator?: Operator<T, R>): Observable<R> {
    const lifted = new IsolatedObservable<R>(() => () => undefined, this.hooks);
    lifted.source = this;
    lifted.operator = operator;
    return lifted;
  }

  override subscribe(observerOrNext?: Partial<Observer<T>> | ((value: T) => void) | null): Subscription {
    // Operators subscribe to their source with their own Subscriber: that is internal plumbing, not a user callback.
    if (observerOrNext instanceof Subscriber) return super.subscribe(observerOrNext);
    return super.subscribe(this.guarded(observerOrNext));
  }

  private guarded(observerOrNext: Partial<Observer<T>> | ((value: T) => void) | null | undefined): Partial<Observer<T>> {
    const observer = typeof observerOrNext === 'function' ? { next: observerOrNext } : (observerOrNext ?? {});
    const guard =
      <A extends unknown[]>(callback: ((...args: A) => void) | undefined) =>
      (...args: A): void => {
        try {
          callback?.apply(observer, args);
        } catch (error) {
          this.hooks.onError(error);
        }
      };
    return {
      next: guard(observer.next),
      // An error with no handler is reported rather than thrown on a later tick.
      error: observer.error ? guard(observer.error) : (error: unknown) => this.hooks.onError(error),
      complete: guard(observer.complete),
    };
  }
}
