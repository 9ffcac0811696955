import { h } from "../dom.js";
import type { Screen } from "../screen.js";
import { chatPanel } from "./chat.js";
import { searchPanel } from "./search.js";

/** Search (ranked passages with source and score) and grounded chat with numbered citations. */
export function searchScreen(): Screen {
  const search = searchPanel();
  return {
    el: h(
      "section",
      { class: "screen", "aria-labelledby": "search-title" },
      h("h2", { id: "search-title" }, "Search and chat"),
      h("div", { class: "split" }, search.el, chatPanel()),
    ),
    show: () => search.focus(),
  };
}
