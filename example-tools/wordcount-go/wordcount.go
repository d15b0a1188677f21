package export_toolhost_tool_tools

// The tools themselves, in plain Go: word counts of a text file and the largest files under a
// directory. Nothing here knows about WebAssembly; tools.go connects them to the WIT interface.

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// MinLengthVar names the environment variable that sets the shortest word `count_words` ranks.
const MinLengthVar = "WORDCOUNT_MIN_LENGTH"

// maxFileBytes is the most `count_words` reads of a file.
const maxFileBytes = 8 << 20

// step is about how many bytes `count_words` counts between two progress reports.
const step = 64 << 10

// invalidArguments is an error in the arguments, the model's to fix.
type invalidArguments struct{ message string }

func (e invalidArguments) Error() string { return e.message }

// WordCount is what count_words returns.
type WordCount struct {
	Path        string      `json:"path"`
	Bytes       int         `json:"bytes"`
	Lines       int         `json:"lines"`
	Words       int         `json:"words"`
	UniqueWords int         `json:"unique_words"`
	MinLength   int         `json:"min_length"`
	TopWords    []WordTally `json:"top_words"`
}

// WordTally is one word and how often it occurs.
type WordTally struct {
	Word  string `json:"word"`
	Count int    `json:"count"`
}

// LargestFiles is what largest_files returns.
type LargestFiles struct {
	Dir        string     `json:"dir"`
	TotalFiles int        `json:"total_files"`
	TotalBytes int64      `json:"total_bytes"`
	Files      []FileSize `json:"files"`
}

// FileSize is one file and its size in bytes.
type FileSize struct {
	Path string `json:"path"`
	Size int64  `json:"size"`
}

// rooted is `path`, or `/path` when `path` is relative, does not exist and `/path` does: asked
// about "/data", a model often writes "data", which the working directory (itself /data, or
// none) does not hold.
func rooted(path string) string {
	if filepath.IsAbs(path) {
		return path
	}
	if _, err := os.Stat(path); err == nil {
		return path
	}
	if _, err := os.Stat("/" + path); err == nil {
		return "/" + path
	}
	return path
}

// unavailable explains an error opening `path`, which usually means it was not granted.
func unavailable(path string, err error) error {
	var pathErr *fs.PathError
	if errors.As(err, &pathErr) {
		err = pathErr.Err
	}
	return fmt.Errorf("cannot read %s: %v (only directories granted to this tool exist for it)", path, err)
}

// minLength reads WORDCOUNT_MIN_LENGTH: words shorter than it are left out of the ranking.
func minLength() (int, error) {
	text, ok := os.LookupEnv(MinLengthVar)
	if !ok || text == "" {
		return 1, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(text))
	if err != nil || n < 1 {
		return 0, fmt.Errorf("the environment variable %s is %q; it must be a whole number from 1 up", MinLengthVar, text)
	}
	return n, nil
}

// CountWords counts the lines, words and distinct words of a UTF-8 text file and ranks the
// `top` most frequent words of at least WORDCOUNT_MIN_LENGTH letters. It reports progress (bytes
// counted of the file's size) as it works through the file.
func CountWords(path string, top int) (*WordCount, error) {
	path = rooted(path)
	min, err := minLength()
	if err != nil {
		return nil, err
	}
	file, err := os.Open(path)
	if err != nil {
		return nil, unavailable(path, err)
	}
	defer file.Close()
	info, err := file.Stat()
	if err != nil {
		return nil, unavailable(path, err)
	}
	if info.IsDir() {
		return nil, fmt.Errorf("%s is a directory, not a file; largest_files lists directories", path)
	}
	data, err := io.ReadAll(io.LimitReader(file, maxFileBytes+1))
	if err != nil {
		return nil, unavailable(path, err)
	}
	if len(data) > maxFileBytes {
		return nil, fmt.Errorf("%s is larger than %d bytes; this tool reads text files only", path, maxFileBytes)
	}
	text := string(data)
	counts := map[string]int{}
	words := 0
	for done := 0; done < len(text); {
		piece := nextPiece(text[done:])
		words += countWords(piece, counts)
		done += len(piece)
		reportProgress(int64(done), int64(len(text)), fmt.Sprintf("%d words counted", words))
	}
	if min > 1 {
		reportLog(fmt.Sprintf("ranking words of %d letters and more (%s)", min, MinLengthVar))
	}
	ranked := []WordTally{}
	for word, count := range counts {
		if len([]rune(word)) >= min {
			ranked = append(ranked, WordTally{word, count})
		}
	}
	sort.Slice(ranked, func(i, j int) bool {
		if ranked[i].Count != ranked[j].Count {
			return ranked[i].Count > ranked[j].Count
		}
		return ranked[i].Word < ranked[j].Word
	})
	if len(ranked) > top {
		ranked = ranked[:top]
	}
	lines := strings.Count(text, "\n")
	if text != "" && !strings.HasSuffix(text, "\n") {
		lines++
	}
	return &WordCount{
		Path:        path,
		Bytes:       len(data),
		Lines:       lines,
		Words:       words,
		UniqueWords: len(counts),
		MinLength:   min,
		TopWords:    ranked,
	}, nil
}

// nextPiece is the start of `text` up to the first line end after `step` bytes: words never
// span lines, so pieces are counted one by one as the whole would be.
func nextPiece(text string) string {
	if len(text) <= step {
		return text
	}
	end := strings.IndexByte(text[step:], '\n')
	if end < 0 {
		return text
	}
	return text[:step+end+1]
}

// countWords adds the words of `text` to `counts`, lowercased, and returns how many there were.
func countWords(text string, counts map[string]int) int {
	words := 0
	for _, word := range strings.FieldsFunc(text, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\''
	}) {
		word = strings.Trim(word, "'")
		if word == "" {
			continue
		}
		words++
		counts[strings.ToLower(word)]++
	}
	return words
}

// FindLargestFiles walks `dir` and returns its `limit` largest files, largest first.
func FindLargestFiles(dir string, limit int) (*LargestFiles, error) {
	dir = rooted(dir)
	info, err := os.Stat(dir)
	if err != nil {
		return nil, unavailable(dir, err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("%s is a file, not a directory", dir)
	}
	result := &LargestFiles{Dir: dir, Files: []FileSize{}}
	err = filepath.WalkDir(dir, func(path string, entry fs.DirEntry, err error) error {
		if err != nil {
			return unavailable(path, err)
		}
		if !entry.Type().IsRegular() {
			return nil
		}
		info, err := entry.Info()
		if err != nil {
			return unavailable(path, err)
		}
		result.TotalFiles++
		result.TotalBytes += info.Size()
		result.Files = append(result.Files, FileSize{path, info.Size()})
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(result.Files, func(i, j int) bool {
		a, b := result.Files[i], result.Files[j]
		if a.Size != b.Size {
			return a.Size > b.Size
		}
		return a.Path < b.Path
	})
	if len(result.Files) > limit {
		result.Files = result.Files[:limit]
	}
	return result, nil
}
