// Runs Step Functions executions for the sandbox on aws-local-stepfunctions (an ASL interpreter).
//
// Protocol: one JSON request per stdin line, one JSON answer per stdout line (same "id").
// A request carries the definition (its "$$.State." references already pointed at
// "$$.Sandbox.<state id>." by the Python side), the input, the context object, the Task states
// that invoke Lambda functions and the sandbox's invoke URL. Each Lambda task POSTs its payload
// there; a function error comes back as {error: {errorType, errorMessage}} and is thrown with
// that name, so the interpreter applies the state's Retry and Catch to it.
//
// The interpreter declares node >= 22; on node 20 the one newer API it uses,
// Promise.withResolvers, is provided here.
import { createRequire } from "node:module";
import readline from "node:readline";

if (typeof Promise.withResolvers !== "function") {
  Promise.withResolvers = function withResolvers() {
    let resolve;
    let reject;
    const promise = new Promise((yes, no) => {
      resolve = yes;
      reject = no;
    });
    return { promise, resolve, reject };
  };
}

const require = createRequire(`${process.env.SANDBOX_NODE_MODULES}/`);
const { StateMachine } = require("aws-local-stepfunctions");

function summary(event) {
  const state = event.state ? event.state.name : undefined;
  const found = { type: event.type, state };
  if (event.Error !== undefined) found.error = event.Error;
  if (event.retry) found.attempt = event.retry.attempt;
  return found;
}

async function run(request) {
  const context = request.context;
  const states = context.Sandbox;
  const handlers = {};
  for (const [name, task] of Object.entries(request.tasks)) {
    const own = states[request.stateIds[name]];
    handlers[name] = async (input) => {
      // A new attempt of this state: every other state's retry count starts over when re-entered.
      for (const other of Object.values(states)) {
        if (other !== own) other.RetryCount = 0;
      }
      const response = await fetch(request.invokeUrl, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          execution: request.id, state: name, function: task.function,
          payload: task.integration === "invoke" ? input.Payload : input,
        }),
      });
      const answer = await response.json();
      if (answer.error) {
        own.RetryCount += 1;
        const error = new Error(answer.error.errorMessage);
        error.name = answer.error.errorType;
        throw error;
      }
      own.RetryCount = 0;
      if (task.integration === "invoke") {
        return { ExecutedVersion: "$LATEST", Payload: answer.result, StatusCode: 200 };
      }
      return answer.result;
    };
  }
  const history = [];
  try {
    const machine = new StateMachine(request.definition, {
      validationOptions: { checkArn: false, checkPaths: false },
    });
    const execution = machine.run(request.input, {
      overrides: { taskResourceLocalHandlers: handlers },
      context,
    });
    const logging = (async () => {
      for await (const event of execution.eventLogs) history.push(summary(event));
    })();
    try {
      const output = await execution.result;
      return { id: request.id, status: "SUCCEEDED", output, history };
    } finally {
      await Promise.race([logging, new Promise((done) => setTimeout(done, 100))]);
    }
  } catch (failure) {
    const inner = failure && failure.name === "ExecutionError" && failure.cause ? failure.cause : failure;
    const error = inner && inner.name ? inner.name : "States.Runtime";
    const timedOut = failure && failure.name === "ExecutionTimeoutError";
    return {
      id: request.id, status: timedOut ? "TIMED_OUT" : "FAILED",
      error: timedOut ? "States.Timeout" : error, cause: inner ? String(inner.message) : "", history,
    };
  }
}

const lines = readline.createInterface({ input: process.stdin });
lines.on("line", (line) => {
  const request = JSON.parse(line);
  run(request).then((answer) => process.stdout.write(`${JSON.stringify(answer)}\n`));
});
