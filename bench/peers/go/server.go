// The Go net/http peer: the four workload routes plus /health, answering the same JSON
// shapes and status codes as examples/workload/workload.svc, with the same strict checks
// (exact fields, JSON types, i32 range for age) and the same seeded SQLite table.
// Port from SVC_PORT (default 8080), database from SVC_DB (default :memory:).
package main

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"mime"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"

	_ "github.com/mattn/go-sqlite3"
)

type User struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
	Age  int32  `json:"age"`
}

// userIn has pointer fields so that a missing (or null) field is told apart from a zero.
type userIn struct {
	ID   *int64  `json:"id"`
	Name *string `json:"name"`
	Age  *int32  `json:"age"`
}

var lookup *sql.Stmt

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, _ := json.Marshal(v)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body)
}

func fail(w http.ResponseWriter, status int, reason string) {
	writeJSON(w, status, map[string]string{"error": reason})
}

// allow answers 405 unless the request uses the route's method (HEAD rides on GET).
func allow(w http.ResponseWriter, r *http.Request, method string) bool {
	if r.Method == method || (method == "GET" && r.Method == "HEAD") {
		return true
	}
	if method == "GET" {
		w.Header().Set("Allow", "GET, HEAD")
	} else {
		w.Header().Set("Allow", method)
	}
	fail(w, 405, "method not allowed")
	return false
}

func health(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, "GET") {
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Content-Length", "2")
	w.Write([]byte("ok"))
}

func small(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, "GET") {
		return
	}
	writeJSON(w, 200, User{ID: 1, Name: "ada", Age: 36})
}

func decodeUser(r *http.Request) (User, int, error) {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || mt != "application/json" {
			return User{}, 415, errors.New("content type must be application/json")
		}
	}
	dec := json.NewDecoder(io.LimitReader(r.Body, 1<<20))
	dec.DisallowUnknownFields()
	var in userIn
	if err := dec.Decode(&in); err != nil {
		return User{}, 400, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return User{}, 400, errors.New("trailing data after the JSON value")
	}
	if in.ID == nil || in.Name == nil || in.Age == nil {
		return User{}, 400, errors.New("missing field")
	}
	return User{ID: *in.ID, Name: *in.Name, Age: *in.Age}, 200, nil
}

func echo(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, "POST") {
		return
	}
	u, status, err := decodeUser(r)
	if err != nil {
		fail(w, status, err.Error())
		return
	}
	writeJSON(w, 200, u)
}

func query(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, "GET") {
		return
	}
	q := r.URL.Query()
	limit, err := strconv.ParseInt(q.Get("limit"), 10, 64)
	if err != nil {
		fail(w, 400, "bad query parameter 'limit'")
		return
	}
	if !q.Has("name") {
		fail(w, 400, "missing query parameter 'name'")
		return
	}
	writeJSON(w, 200, User{ID: limit, Name: q.Get("name"), Age: 30})
}

func userByID(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, "GET") {
		return
	}
	rest := strings.TrimPrefix(r.URL.Path, "/users/")
	if strings.Contains(rest, "/") {
		fail(w, 404, "not found")
		return
	}
	id, err := strconv.ParseInt(rest, 10, 64)
	if err != nil {
		fail(w, 400, "bad path parameter 'id'")
		return
	}
	var u User
	err = lookup.QueryRow(id).Scan(&u.ID, &u.Name, &u.Age)
	if err == sql.ErrNoRows {
		fail(w, 404, "not found")
		return
	} else if err != nil {
		log.Printf("database: %v", err)
		fail(w, 500, "internal error")
		return
	}
	writeJSON(w, 200, u)
}

func notFound(w http.ResponseWriter, r *http.Request) {
	fail(w, 404, "not found")
}

func openDB(path string) *sql.DB {
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		log.Fatal(err)
	}
	// One connection: every ":memory:" connection would otherwise be its own empty database.
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	stmts := []string{
		"CREATE TABLE IF NOT EXISTS users (id INTEGER PRIMARY KEY, name TEXT NOT NULL, age INTEGER NOT NULL)",
		"DELETE FROM users",
	}
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			log.Fatal(err)
		}
	}
	tx, _ := db.Begin()
	for i := 1; i <= 1000; i++ {
		if _, err := tx.Exec("INSERT INTO users (id, name, age) VALUES (?, ?, ?)", i, fmt.Sprintf("user%d", i), 18+i%60); err != nil {
			log.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		log.Fatal(err)
	}
	if path != ":memory:" { // a file can have a connection per thread (GOMAXPROCS)
		db.SetMaxOpenConns(runtime.GOMAXPROCS(0))
		db.SetMaxIdleConns(runtime.GOMAXPROCS(0))
	}
	lookup, err = db.Prepare("SELECT id, name, age FROM users WHERE id = ?")
	if err != nil {
		log.Fatal(err)
	}
	return db
}

func env(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}

func main() {
	openDB(env("SVC_DB", ":memory:"))
	mux := http.NewServeMux()
	mux.HandleFunc("/health", health)
	mux.HandleFunc("/small", small)
	mux.HandleFunc("/echo", echo)
	mux.HandleFunc("/query", query)
	mux.HandleFunc("/users/", userByID)
	mux.HandleFunc("/", notFound)
	port := env("SVC_PORT", "8080")
	ln, err := net.Listen("tcp", "127.0.0.1:"+port)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("listening on http://127.0.0.1:%s\n", port)
	log.Fatal(http.Serve(ln, mux))
}
