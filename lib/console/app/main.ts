import { type ApiError, api, session, whenUnauthorized } from "./api.js";
import { competitorPage } from "./competitors/page.js";
import { competitorsScreen } from "./competitors/screen.js";
import { field, fill, h } from "./dom.js";
import { busy, Feedback } from "./feedback.js";
import { homeScreen } from "./home/screen.js";
import { intelScreen } from "./intel/screen.js";
import { knowledgeScreen } from "./knowledge/screen.js";
import type { Screen, ScreenFactory } from "./screen.js";
import { searchScreen } from "./search/screen.js";
import { settingsScreen } from "./settings/screen.js";
import { Spec } from "./spec.js";

/** The console: sign in with an API key, then six screens over the public API and a page per competitor. */

const SCREENS: Array<{ route: string; label: string; make: ScreenFactory; hidden?: true }> = [
  { route: "home", label: "Home", make: homeScreen },
  { route: "knowledge", label: "Knowledge", make: knowledgeScreen },
  { route: "search", label: "Search and chat", make: searchScreen },
  { route: "intel", label: "Intel", make: intelScreen },
  { route: "competitors", label: "Competitors", make: competitorsScreen },
  { route: "settings", label: "Settings", make: settingsScreen },
  // Reached from a competitor's name, not the menu.
  { route: "competitor", label: "Competitor", make: competitorPage, hidden: true },
];

const root = document.getElementById("app") as HTMLElement;

/** The sign-in form (saying why, after a key stopped working); resolves once a key works. */
function signIn(reason?: ApiError): Promise<void> {
  let signedIn: () => void = () => undefined;
  const done = new Promise<void>((resolve) => {
    signedIn = resolve;
  });
  const feedback = new Feedback();
  const key = h("input", {
    type: "password",
    required: true,
    autocomplete: "off",
    spellcheck: "false",
    minlength: 16,
  });
  const submit = h("button", { type: "submit" }, "Sign in");
  const form = h(
    "form",
    { class: "panel sign-in", "aria-labelledby": "sign-in-title" },
    h("h1", { id: "sign-in-title" }, "Knowledge Base and Marketing Intel"),
    field(
      "API key",
      key,
      "Kept in this tab only, until you sign out or close it. Your administrator gives you one: running the service yourself, “npm start” prints one when it starts and “npm run keys” makes more; on AWS, the operator creates keys with the command in the operations guide.",
    ),
    h("div", { class: "actions" }, submit),
    feedback.el,
  );
  if (reason) feedback.error(reason);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const candidate = key.value.trim();
    const ok = await busy(submit, () =>
      feedback.run(() => api("GET", "api/knowledge", { query: { limit: 1 }, key: candidate })),
    );
    if (ok === undefined) return;
    session.signIn(candidate);
    key.value = "";
    signedIn();
  });
  fill(root, h("main", { id: "main" }, form));
  key.focus();
  return done;
}

async function start() {
  let spec: Spec;
  try {
    spec = await Spec.load();
  } catch (err) {
    const feedback = new Feedback();
    feedback.error(err);
    fill(root, h("main", { id: "main" }, h("h1", null, "KB & Intel"), feedback.el));
    return;
  }
  const screens = new Map<string, Screen>();
  const links = new Map<string, HTMLAnchorElement>();
  const main = h("main", { id: "main", tabindex: "-1" });
  const nav = h(
    "nav",
    { "aria-label": "Screens" },
    h(
      "ul",
      null,
      SCREENS.filter((s) => !s.hidden).map(({ route, label }) => {
        const a = h("a", { href: `#/${route}` }, label);
        links.set(route, a);
        return h("li", null, a);
      }),
    ),
  );
  const signOut = h("button", { type: "button", class: "quiet" }, "Sign out");
  signOut.addEventListener("click", () => {
    session.signOut();
    location.hash = "";
    void signIn().then(start);
  });
  // The router owns the hash, so the skip link moves focus itself.
  const skip = h("a", { class: "skip", href: "#main" }, "Skip to content");
  skip.addEventListener("click", (event) => {
    event.preventDefault();
    main.focus();
  });
  fill(
    root,
    skip,
    // The one level-one heading of every screen, which each titles with its h2.
    h("header", null, h("h1", null, "KB & Intel"), nav, signOut),
    main,
  );

  const route = (event?: HashChangeEvent) => {
    if (!session.key()) return;
    const [name = "", query = ""] = location.hash.replace(/^#\/?/, "").split("?");
    const entry = SCREENS.find((s) => s.route === name) ?? SCREENS[0];
    if (!entry) return;
    let screen = screens.get(entry.route);
    if (!screen) {
      screen = entry.make(spec);
      screens.set(entry.route, screen);
      main.append(screen.el);
    }
    for (const [key, other] of screens) other.el.hidden = key !== entry.route;
    // A competitor's page belongs to the Competitors entry of the menu.
    const current = entry.route === "competitor" ? "competitors" : entry.route;
    for (const [key, a] of links) {
      if (key === current) a.setAttribute("aria-current", "page");
      else a.removeAttribute("aria-current");
    }
    document.title = `${entry.label} · KB & Intel`;
    // Moving to another screen moves focus to its heading, so keyboard and screen reader users
    // start there rather than on the link they left.
    const heading = screen.el.querySelector("h2");
    if (event && heading) {
      heading.tabIndex = -1;
      heading.focus();
    }
    screen.show(new URLSearchParams(query));
  };
  window.onhashchange = route;
  route();
}

whenUnauthorized((error) => {
  session.signOut();
  void signIn(error).then(start);
});

if (session.key()) void start();
else void signIn().then(start);
