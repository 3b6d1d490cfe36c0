import { createActor, type AnyActorRef } from 'xstate';
import { describe, expect, it } from 'vitest';
import { EffectDispatcher, effectPort, type EffectCancellation } from '../../../src/runtime/effect-port.js';

/** A stand-in for a chart: records what the port replies to it. */
function requester() {
  const received: unknown[] = [];
  return { ref: { send: (event: unknown) => received.push(event) } as unknown as AnyActorRef, received };
}

/** An effect that waits until the test settles it, and remembers its cancellation. */
function pending() {
  const calls: { resolve: (value: unknown) => void; cancellation: EffectCancellation }[] = [];
  const handler = (_input: unknown, cancellation: EffectCancellation) => new Promise((resolve) => calls.push({ resolve, cancellation }));
  return { handler, calls };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('effect port (one request in flight per actor)', () => {
  it('replies to the actor that asked, once', async () => {
    const work = pending();
    const port = createActor(effectPort({ work: work.handler }, new Set(['work']))).start();
    const chart = requester();
    port.send({ type: 'effect.request', name: 'work', input: 1, replyTo: chart.ref });
    work.calls[0]!.resolve('ok');
    await settle();
    expect(chart.received).toEqual([{ type: 'effect.done', output: 'ok' }]);
  });

  it('a cancelled request has its signal aborted and never replies', async () => {
    const work = pending();
    const port = createActor(effectPort({ work: work.handler }, new Set(['work']))).start();
    const chart = requester();
    port.send({ type: 'effect.request', name: 'work', input: 1, replyTo: chart.ref });
    const { signal } = work.calls[0]!.cancellation;
    port.send({ type: 'effect.cancel', replyTo: chart.ref });
    expect(signal.aborted).toBe(true);
    work.calls[0]!.resolve('too late');
    await settle();
    expect(chart.received).toEqual([]);
  });

  it("a new request from the same actor replaces the one in flight; other actors' requests are untouched", async () => {
    const work = pending();
    const port = createActor(effectPort({ work: work.handler }, new Set(['work']))).start();
    const chart = requester();
    const other = requester();
    port.send({ type: 'effect.request', name: 'work', input: 1, replyTo: chart.ref });
    port.send({ type: 'effect.request', name: 'work', input: 2, replyTo: other.ref });
    port.send({ type: 'effect.request', name: 'work', input: 3, replyTo: chart.ref });
    expect(work.calls[0]!.cancellation.aborted).toBe(true);
    expect(work.calls[1]!.cancellation.aborted).toBe(false);
    work.calls[0]!.resolve('replaced');
    work.calls[1]!.resolve('other');
    work.calls[2]!.resolve('latest');
    await settle();
    expect(chart.received).toEqual([{ type: 'effect.done', output: 'latest' }]);
    expect(other.received).toEqual([{ type: 'effect.done', output: 'other' }]);
  });

  it('stopping the port aborts what is still running', () => {
    const work = pending();
    const port = createActor(effectPort({ work: work.handler }, new Set(['work']))).start();
    port.send({ type: 'effect.request', name: 'work', input: 1, replyTo: requester().ref });
    port.stop();
    expect(work.calls[0]!.cancellation.aborted).toBe(true);
  });
});

/** A dispatcher with one pending effect, `work`, and a chart that records the replies it gets. */
function dispatching() {
  const work = pending();
  return { work, dispatcher: new EffectDispatcher({ work: work.handler }, new Set(['work'])), chart: requester() };
}

describe('effect dispatcher (the charts reach it directly)', () => {
  it('a request asked during a transition starts a microtask later and replies as an event', async () => {
    const { work, dispatcher, chart } = dispatching();
    dispatcher.requestAfterTransition(chart.ref, 'work', 1);
    expect(work.calls).toHaveLength(0);
    await Promise.resolve();
    expect(work.calls).toHaveLength(1);
    work.calls[0]!.resolve('ok');
    await settle();
    expect(chart.received).toEqual([{ type: 'effect.done', output: 'ok' }]);
  });

  it('a request cancelled before it started never starts; one replaced starts only the newer', async () => {
    const { work, dispatcher, chart } = dispatching();
    dispatcher.requestAfterTransition(chart.ref, 'work', 1);
    dispatcher.cancel(chart.ref);
    dispatcher.requestAfterTransition(chart.ref, 'work', 2);
    dispatcher.requestAfterTransition(chart.ref, 'work', 3);
    await settle();
    expect(work.calls).toHaveLength(1);
    work.calls[0]!.resolve('third');
    await settle();
    expect(chart.received).toEqual([{ type: 'effect.done', output: 'third' }]);
  });

  it('stop aborts the signal of what runs and drops its reply', async () => {
    const { work, dispatcher, chart } = dispatching();
    dispatcher.request(chart.ref, 'work', 1);
    const { signal } = work.calls[0]!.cancellation;
    dispatcher.stop();
    expect(signal.aborted).toBe(true);
    work.calls[0]!.resolve('late');
    await settle();
    expect(chart.received).toEqual([]);
  });
});
