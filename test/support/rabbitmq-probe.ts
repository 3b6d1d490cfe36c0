import { connect } from 'amqplib';
import { messageOf } from '../../src/protocol/error-message.js';

/** The broker `npm test` uses when TEST_AMQP_URL is not set: this machine's RabbitMQ. */
export const LOCAL_AMQP_URL = 'amqp://guest:guest@127.0.0.1:5672';

/**
 * Vitest global setup: points the RabbitMQ suites at the local broker when one answers, so `npm test`
 * runs them without configuration, and says which way it went (they skip with that reason otherwise).
 */
export default async function setup(): Promise<void> {
  if (process.env.TEST_AMQP_URL) {
    console.log('RabbitMQ suites: on TEST_AMQP_URL');
    return;
  }
  try {
    const connection = await connect(LOCAL_AMQP_URL, { timeout: 2_000 });
    await connection.close();
    process.env.TEST_AMQP_URL = LOCAL_AMQP_URL;
    console.log(`RabbitMQ suites: a broker answers on ${LOCAL_AMQP_URL.replace('guest:guest@', '')}; running them there`);
  } catch (error) {
    console.log(`RabbitMQ suites: skipped — no broker answers on 127.0.0.1:5672 (${messageOf(error)}); set TEST_AMQP_URL to use another`);
  }
}
