"""Reading a Markdown table out of a document: shared by the C side's doc
tests (ctest) and the Python side's (pytest), so both read the page the
same way.  Standard library only."""


def doc_table(doc: str, heading: str) -> list[list[str]]:
    """The rows of the first table after `heading` in `doc`, cells stripped,
    past the header and its rule."""
    table = []
    for line in doc[doc.index(heading):].splitlines():
        if line.startswith("|"):
            table.append([c.strip() for c in line.strip().strip("|").split("|")])
        elif table:
            break
    return table[2:]
