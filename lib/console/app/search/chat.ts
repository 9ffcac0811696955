import { ApiError, chatStream } from "../api.js";
import type { ChatAnswer, ChatDelta, ChatTurn, ErrorBody } from "../api-types.js";
import { citationList, cited } from "../document.js";
import { field, fill, h } from "../dom.js";
import { busy, Feedback } from "../feedback.js";

/** Grounded chat: the answer streamed in, then with its numbered citations. */
export function chatPanel(): HTMLFormElement {
  const feedback = new Feedback();
  const history: ChatTurn[] = [];
  const log = h("div", { class: "chat-log", "aria-live": "polite", "aria-label": "Conversation" });
  const message = h("textarea", { rows: 2, required: true, maxlength: 4000 });
  const send = h("button", { type: "submit" }, "Send");
  const form = h(
    "form",
    { class: "panel" },
    h("h3", null, "Chat with your knowledge"),
    log,
    field("Message", message, "Answers cite the passages they use as [n]."),
    h("div", { class: "actions" }, send),
    feedback.el,
  );
  message.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      form.requestSubmit();
    }
  });
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const text = message.value.trim();
    if (!text) return;
    message.value = "";
    log.append(h("div", { class: "turn user" }, h("strong", null, "You"), h("p", null, text)));
    const body = h("p", { class: "streaming" });
    const turn = h("div", { class: "turn assistant" }, h("strong", null, "Assistant"), body);
    log.append(turn);
    let answer = "";
    await busy(send, () =>
      feedback.run(() =>
        chatStream({ message: text, history: [...history] }, ({ event, data }) => {
          if (event === "delta") {
            answer += (data as ChatDelta).text;
            body.textContent = answer;
          } else if (event === "done") {
            const done = data as ChatAnswer;
            answer = done.answer;
            body.classList.remove("streaming");
            fill(body, cited(done.answer, done.citations));
            const sources = citationList(done.citations);
            if (sources) turn.append(sources);
          } else if (event === "error") {
            const { error } = data as ErrorBody;
            throw new ApiError(0, error.code, error.message);
          }
        }),
      ),
    );
    body.classList.remove("streaming");
    if (answer)
      history.push({ role: "user", content: text }, { role: "assistant", content: answer });
  });
  return form;
}
