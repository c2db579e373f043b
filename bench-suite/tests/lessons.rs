//! Every numbered chapter of the guide (`docs/NN-*.md`, 1 to the last) is one lesson of one shape, and the book's
//! order (`docs/SUMMARY.md`) holds every chapter, the concepts chapter second.
//!
//! The shape is the course's promise to a reader who comes from the Python GPU tutorials: the question; the one idea
//! the chapter teaches, said in a sentence before anything is measured; the reader's prediction; the command; the
//! measured answer, with a chart; why, with the kernel; what changes the answer; exercises, each with its answer
//! folded under it. A chapter that loses a part, or an exercise written without its answer, fails here by name, and
//! the checker itself is tested on a planted chapter missing each part in turn, so that it cannot pass by finding
//! nothing.

use std::path::{Path, PathBuf};

fn docs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace root").join("docs")
}

/// The lesson's sections, in the order a chapter gives them.
const SECTIONS: [&str; 7] = [
    "## The question",
    "## Predict",
    "## The command",
    "## The measured answer",
    "## Why",
    "## What changes the answer",
    "## Exercises",
];

/// How a chapter names its one idea, between its question and its prediction.
const IDEA: &str = "**The idea of this chapter:**";

/// The lines of `text` outside fenced code blocks, with their numbers from 1.
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut fenced = false;
    let mut lines = Vec::new();
    for (k, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            lines.push((k + 1, line));
        }
    }
    lines
}

/// Whether `line` starts a numbered item at the left margin (`2. Run ...`): an exercise, in the Exercises section.
fn starts_an_exercise(line: &str) -> bool {
    line.split_once(". ").is_some_and(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
}

/// What a chapter's text lacks of the lesson's shape, one sentence each; empty for a whole lesson.
fn lesson_defects(text: &str) -> Vec<String> {
    let lines = prose_lines(text);
    let mut defects = Vec::new();
    let heading_at = |heading: &str| lines.iter().position(|(_, line)| line.trim_end() == heading);
    let at: Vec<Option<usize>> = SECTIONS.iter().map(|s| heading_at(s)).collect();
    for (section, position) in SECTIONS.iter().zip(&at) {
        if position.is_none() {
            defects.push(format!("no `{section}` section"));
        }
    }
    let found: Vec<usize> = at.iter().flatten().copied().collect();
    if found.windows(2).any(|pair| pair[0] > pair[1]) {
        defects.push(format!("sections out of the lesson's order ({})", SECTIONS.join(", ")));
    }
    if let (Some(question), Some(predict)) = (at[0], at[1])
        && !lines[question..predict].iter().any(|(_, line)| line.contains(IDEA))
    {
        defects.push(format!("no `{IDEA}` sentence between the question and the prediction"));
    }
    if !lines.iter().any(|(_, line)| line.contains("![")) {
        defects.push("no chart".to_owned());
    }
    if let Some(exercises) = at[6] {
        let section = &lines[exercises + 1..];
        let end = section.iter().position(|(_, line)| line.starts_with("## ")).unwrap_or(section.len());
        let section = &section[..end];
        // An exercise is a numbered item at the left margin; its answer, a `<details>` block, is indented under it.
        let items: Vec<usize> = (0..section.len()).filter(|&k| starts_an_exercise(section[k].1)).collect();
        let mut unanswered = Vec::new();
        for (j, &item) in items.iter().enumerate() {
            let body = &section[item + 1..items.get(j + 1).copied().unwrap_or(section.len())];
            let answered =
                body.iter().any(|(_, l)| l.contains("<details>")) && body.iter().any(|(_, l)| l.contains("</details>"));
            if !answered {
                unanswered.push(format!("line {}", section[item].0));
            }
        }
        let exercises = items.len();
        if exercises == 0 {
            defects.push("no exercise".to_owned());
        }
        if !unanswered.is_empty() {
            defects.push(format!("exercises without a folded answer (`<details>`): {}", unanswered.join(", ")));
        }
    }
    defects
}

/// The numbered chapters, in their numbers' order: `docs/01-*.md` on (chapter 0, "Start here", is the course's door,
/// not a lesson).
fn chapters() -> Vec<PathBuf> {
    let mut chapters: Vec<PathBuf> = std::fs::read_dir(docs())
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            name.ends_with(".md")
                && name.len() > 3
                && name[..2].chars().all(|c| c.is_ascii_digit())
                && &name[2..3] == "-"
                && !name.starts_with("00-")
        })
        .collect();
    chapters.sort();
    chapters
}

#[test]
fn every_numbered_chapter_is_one_lesson_of_the_courses_shape() {
    let chapters = chapters();
    assert!(chapters.len() >= 28, "found only {} numbered chapters under docs/", chapters.len());
    let mut failures = Vec::new();
    for chapter in &chapters {
        let defects = lesson_defects(&std::fs::read_to_string(chapter).unwrap());
        if !defects.is_empty() {
            failures.push(format!("{}: {}", chapter.file_name().unwrap().to_string_lossy(), defects.join("; ")));
        }
    }
    assert!(failures.is_empty(), "chapters that are not whole lessons:\n{}", failures.join("\n"));
}

/// A whole lesson, small: the checker finds nothing in it, and finds the part removed from each copy of it.
const PLANTED: &str = "# 99. A lesson\n\n## The question\n\nWhy?\n\n**The idea of this chapter:** because.\n\n\
                       ## Predict\n\nSoon.\n\n## The command\n\n```sh\ngpuworthy run square\n## not a heading\n```\n\n\
                       ## The measured answer\n\n![a chart](charts/x.svg)\n\n## Why\n\nThe kernel.\n\n\
                       ## What changes the answer\n\nSize.\n\n## Exercises\n\n1. Run it.\n\n   <details><summary>Answer\
                       </summary>\n\n   It prints.\n\n   </details>\n\n2. Run it again.\n\n   <details><summary>Answer\
                       </summary>\n\n   Again.\n\n   </details>\n";

#[test]
fn the_checker_finds_each_part_a_planted_lesson_lacks() {
    assert_eq!(lesson_defects(PLANTED), Vec::<String>::new(), "the planted lesson is whole");
    for section in SECTIONS {
        let without = PLANTED.replace(&format!("{section}\n"), "");
        let defects = lesson_defects(&without);
        assert!(defects.iter().any(|d| d.contains(section)), "{section} removed: {defects:?}");
    }
    let idea_after_predict = PLANTED
        .replace("**The idea of this chapter:** because.\n\n", "")
        .replace("Soon.", "**The idea of this chapter:** x");
    assert!(lesson_defects(&idea_after_predict).iter().any(|d| d.contains("The idea")));
    let swapped =
        PLANTED.replace("## Why\n", "## Tmp\n").replace("## Predict\n", "## Why\n").replace("## Tmp\n", "## Predict\n");
    assert!(lesson_defects(&swapped).iter().any(|d| d.contains("order")));
    assert!(lesson_defects(&PLANTED.replace("![a chart](charts/x.svg)", "A chart.")).iter().any(|d| d == "no chart"));
    let second_unanswered = PLANTED.replace(
        "2. Run it again.\n\n   <details><summary>Answer</summary>\n\n   Again.\n\n   </details>\n",
        "2. Run it again.\n",
    );
    assert_ne!(second_unanswered, PLANTED);
    let defects = lesson_defects(&second_unanswered);
    let unanswered: Vec<&String> = defects.iter().filter(|d| d.contains("without a folded answer")).collect();
    assert!(unanswered.len() == 1 && unanswered[0].matches("line ").count() == 1, "{defects:?}");
}

#[test]
fn the_book_holds_every_chapter_in_order_with_the_concepts_chapter_second() {
    let summary = std::fs::read_to_string(docs().join("SUMMARY.md")).unwrap();
    let links: Vec<&str> = summary
        .lines()
        .filter_map(|line| line.trim_start().strip_prefix("- [").and_then(|rest| rest.split_once("](")))
        .map(|(_, target)| target.trim_end_matches(')'))
        .collect();
    assert_eq!(links.get(..2), Some(&["00-start-here.md", "numbers-that-decide.md"][..]), "{links:?}");
    let listed: Vec<&str> =
        links.iter().copied().filter(|l| l.len() > 3 && l[..2].chars().all(|c| c.is_ascii_digit())).collect();
    let mut files: Vec<String> =
        chapters().iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
    files.insert(0, "00-start-here.md".to_owned());
    assert_eq!(listed, files, "SUMMARY.md lists the numbered chapters in their order, each once");
}
