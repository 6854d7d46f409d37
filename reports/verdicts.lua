-- Pandoc Lua filter for the combined report's HTML (combine_report.sh): a bold verdict, **HOLDS**,
-- **DOES NOT HOLD**, **UNRESOLVED** or **NOT TESTABLE** (the engine's words, always bold in section.md),
-- becomes <span class="verdict verdict-holds"><strong>HOLDS</strong></span> and so on, coloured by report.css.
-- Any other bold text is left as it is.
local classes = {
  ["HOLDS"] = "verdict-holds",
  ["DOES NOT HOLD"] = "verdict-does-not-hold",
  ["UNRESOLVED"] = "verdict-unresolved",
  ["NOT TESTABLE"] = "verdict-not-testable",
}

function Strong(el)
  local class = classes[pandoc.utils.stringify(el)]
  if class then
    return pandoc.Span({ el }, pandoc.Attr("", { "verdict", class }))
  end
end
