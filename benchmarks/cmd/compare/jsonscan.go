package main

import (
	"errors"
	"fmt"
)

// The sink reads every batch body with this scanner rather than
// encoding/json: it checks the whole body's JSON syntax and picks out each
// event's id at a fraction of the CPU (encoding/json took about 70% of the
// sink's CPU, and the sink shares the machine's cores with the SDK being
// measured). It does not check UTF-8 inside strings.

var errSyntax = errors.New("invalid JSON")

// batchIDs calls id for every element of the top-level "batch" array with
// the raw (still escaped) value of its "messageId", or of its "uuid" when
// it has no messageId, or nil when it has neither.
func batchIDs(body []byte, id func(raw []byte)) error {
	s := scanner{b: body}
	s.ws()
	err := s.object(func(key []byte) error {
		if string(key) != "batch" {
			return s.value(1)
		}
		s.ws()
		if s.peek() != '[' {
			return s.value(1)
		}
		return s.array(func() error {
			s.ws()
			if s.peek() != '{' {
				id(nil)
				return s.value(2)
			}
			var msgID, uuid []byte
			err := s.object(func(key []byte) error {
				s.ws()
				if (string(key) == "messageId" || string(key) == "uuid") && s.peek() == '"' {
					v, err := s.str()
					if string(key) == "messageId" {
						msgID = v
					} else {
						uuid = v
					}
					return err
				}
				return s.value(3)
			})
			if msgID == nil {
				msgID = uuid
			}
			id(msgID)
			return err
		})
	})
	if err != nil {
		return err
	}
	s.ws()
	if s.i != len(s.b) {
		return fmt.Errorf("%w: data after the top-level value at byte %d", errSyntax, s.i)
	}
	return nil
}

type scanner struct {
	b []byte
	i int
}

const maxDepth = 256

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *scanner) fail() error { return fmt.Errorf("%w at byte %d", errSyntax, s.i) }

// object reads {"key": value, ...}; member reads each value.
func (s *scanner) object(member func(key []byte) error) error {
	if s.peek() != '{' {
		return s.fail()
	}
	s.i++
	s.ws()
	if s.peek() == '}' {
		s.i++
		return nil
	}
	for {
		s.ws()
		if s.peek() != '"' {
			return s.fail()
		}
		key, err := s.str()
		if err != nil {
			return err
		}
		s.ws()
		if s.peek() != ':' {
			return s.fail()
		}
		s.i++
		if err := member(key); err != nil {
			return err
		}
		s.ws()
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return s.fail()
		}
	}
}

// array reads [value, ...]; elem reads each value.
func (s *scanner) array(elem func() error) error {
	if s.peek() != '[' {
		return s.fail()
	}
	s.i++
	s.ws()
	if s.peek() == ']' {
		s.i++
		return nil
	}
	for {
		if err := elem(); err != nil {
			return err
		}
		s.ws()
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return nil
		default:
			return s.fail()
		}
	}
}

// str reads a string and returns its contents, escapes left as they are.
func (s *scanner) str() ([]byte, error) {
	s.i++ // the opening quote
	start := s.i
	for s.i < len(s.b) {
		switch c := s.b[s.i]; {
		case c == '"':
			v := s.b[start:s.i]
			s.i++
			return v, nil
		case c == '\\':
			if err := s.escape(); err != nil {
				return nil, err
			}
		case c < 0x20:
			return nil, s.fail()
		default:
			s.i++
		}
	}
	return nil, s.fail()
}

// escape checks the escape sequence at s.i and steps over it.
func (s *scanner) escape() error {
	if s.i+1 >= len(s.b) {
		return s.fail()
	}
	switch s.b[s.i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		s.i += 2
		return nil
	case 'u':
		if s.i+6 > len(s.b) {
			return s.fail()
		}
		for _, h := range s.b[s.i+2 : s.i+6] {
			if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
				return s.fail()
			}
		}
		s.i += 6
		return nil
	}
	return s.fail()
}

// value skips any JSON value, checking its syntax.
func (s *scanner) value(depth int) error {
	if depth > maxDepth {
		return s.fail()
	}
	s.ws()
	switch c := s.peek(); {
	case c == '{':
		return s.object(func([]byte) error { return s.value(depth + 1) })
	case c == '[':
		return s.array(func() error { return s.value(depth + 1) })
	case c == '"':
		_, err := s.str()
		return err
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		return s.number()
	}
	return s.fail()
}

func (s *scanner) literal(lit string) error {
	if len(s.b)-s.i < len(lit) || string(s.b[s.i:s.i+len(lit)]) != lit {
		return s.fail()
	}
	s.i += len(lit)
	return nil
}

// number reads -?int(.digits)?([eE][+-]?digits)?.
func (s *scanner) number() error {
	digits := func() int {
		n := 0
		for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
			s.i++
			n++
		}
		return n
	}
	if s.peek() == '-' {
		s.i++
	}
	if s.peek() == '0' {
		s.i++ // no leading zeros: 0 stands alone
	} else if digits() == 0 {
		return s.fail()
	}
	if s.peek() == '.' {
		s.i++
		if digits() == 0 {
			return s.fail()
		}
	}
	if c := s.peek(); c == 'e' || c == 'E' {
		s.i++
		if c := s.peek(); c == '+' || c == '-' {
			s.i++
		}
		if digits() == 0 {
			return s.fail()
		}
	}
	return nil
}
