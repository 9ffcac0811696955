import { ApiError, api, chatStream } from "./api.js";
import { type Citation, citationList, cited } from "./document.js";
import { field, fill, h, link, sourceHref } from "./dom.js";
import { busy, Feedback } from "./feedback.js";
import type { Screen } from "./screen.js";

interface Hit {
  source_id: string;
  text: string;
  score: number;
  source_url_or_path: string | null;
  name: string;
  heading: string | null;
  page: number | null;
}

interface Turn {
  role: "user" | "assistant";
  content: string;
}

/** Search (ranked passages with source and score) and grounded chat with numbered citations. */
export function searchScreen(): Screen {
  const searchFeedback = new Feedback();
  const query = h("input", { type: "search", required: true, maxlength: 2000 });
  const searchButton = h("button", { type: "submit" }, "Search");
  const results = h("ol", { class: "cards results", "aria-label": "Search results" });
  const searchForm = h(
    "form",
    { class: "panel", role: "search" },
    h("h3", null, "Search the knowledge base"),
    h("div", { class: "row" }, field("Query", query), searchButton),
    searchFeedback.el,
    results,
  );
  searchForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    const answer = await busy(searchButton, () =>
      searchFeedback.run(() =>
        api<{ results: Hit[] }>("POST", "api/knowledge/search", {
          body: { query: query.value, limit: 10 },
        }),
      ),
    );
    if (!answer) return;
    searchFeedback.say(`${answer.results.length} passages`);
    fill(
      results,
      answer.results.map((hit) =>
        h(
          "li",
          { class: "card hit" },
          h(
            "div",
            { class: "card-head" },
            link(sourceHref(hit.source_id, hit.source_url_or_path), hit.name),
            h(
              "span",
              { class: "score", title: "Relevance, 0 to 1" },
              `score ${hit.score.toFixed(3)}`,
            ),
          ),
          hit.heading || hit.page
            ? h(
                "p",
                { class: "muted" },
                [hit.heading, hit.page ? `page ${hit.page}` : null].filter(Boolean).join(" · "),
              )
            : null,
          h("p", null, hit.text),
        ),
      ),
    );
  });

  const chatFeedback = new Feedback();
  const history: Turn[] = [];
  const log = h("div", { class: "chat-log", "aria-live": "polite", "aria-label": "Conversation" });
  const message = h("textarea", { rows: 2, required: true, maxlength: 4000 });
  const send = h("button", { type: "submit" }, "Send");
  const chatForm = h(
    "form",
    { class: "panel" },
    h("h3", null, "Chat with your knowledge"),
    log,
    field("Message", message, "Answers cite the passages they use as [n]."),
    h("div", { class: "actions" }, send),
    chatFeedback.el,
  );
  message.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      chatForm.requestSubmit();
    }
  });
  chatForm.addEventListener("submit", async (event) => {
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
      chatFeedback.run(() =>
        chatStream({ message: text, history: [...history] }, ({ event, data }) => {
          if (event === "delta") {
            answer += (data as { text: string }).text;
            body.textContent = answer;
          } else if (event === "done") {
            const done = data as { answer: string; citations: Citation[] };
            answer = done.answer;
            body.classList.remove("streaming");
            fill(body, cited(done.answer, done.citations));
            const sources = citationList(done.citations);
            if (sources) turn.append(sources);
          } else if (event === "error") {
            const { error } = data as { error: { code: string; message: string } };
            throw new ApiError(0, error.code, error.message);
          }
        }),
      ),
    );
    body.classList.remove("streaming");
    if (answer)
      history.push({ role: "user", content: text }, { role: "assistant", content: answer });
  });

  return {
    el: h(
      "section",
      { class: "screen", "aria-labelledby": "search-title" },
      h("h2", { id: "search-title" }, "Search and chat"),
      h("div", { class: "split" }, searchForm, chatForm),
    ),
    show: () => query.focus(),
  };
}
